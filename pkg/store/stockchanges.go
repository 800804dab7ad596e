package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// A stock change restocks (delta > 0) or withdraws (delta < 0) units of an
// item while it sells: one stock_changes row per operation id, written with
// the MySQL side of the change, and a Redis side guarded by the operation id
// (pkg/stockchange owns the order of the steps and says why it is safe). The
// row's state says which step is next:
//
//	PENDING, delta > 0 -> MySQL grew by delta with the row; the Redis give may not have run
//	PENDING, delta < 0 -> MySQL unchanged; the Redis take may not have run
//	APPLIED            -> both stores changed by Applied units
//
// Every state change is a CAS on the state, so two appliers of one change
// write MySQL once.

// ErrStockLimit: the restock would take the item's total over what the INT
// columns and the admin API allow (MaxStock).
var ErrStockLimit = errors.New("store: total stock limit")

// MaxStock is the largest total_stock an item may have (the admin API's
// bound on a PUT's stock, and the INT columns').
const MaxStock = 1_000_000_000

// StockChangeState is a stock_changes.state.
type StockChangeState string

// The states of a stock change.
const (
	StockChangePending StockChangeState = "PENDING"
	StockChangeApplied StockChangeState = "APPLIED"
)

// StockChange is one stock_changes row.
type StockChange struct {
	OperationID string
	ItemID      int64
	Delta       int64 // asked for
	Buckets     int   // the item's bucket count when it was recorded
	Applied     int64 // units changed in both stores (signed), once APPLIED
	State       StockChangeState
	CreatedAt   time.Time
}

const stockChangeCols = "operation_id, item_id, delta, buckets, COALESCE(applied, 0), state, created_at"

func scanStockChange(row interface{ Scan(...any) error }) (StockChange, error) {
	var c StockChange
	var st string
	err := row.Scan(&c.OperationID, &c.ItemID, &c.Delta, &c.Buckets, &c.Applied, &st, &c.CreatedAt)
	c.State = StockChangeState(st)
	return c, err
}

// GetStockChange reads the change of operation id; ErrNotFound when there
// is none. forUpdate locks the row until tx ends.
func GetStockChange(ctx context.Context, q Querier, id string, forUpdate bool) (StockChange, error) {
	query := "SELECT " + stockChangeCols + " FROM stock_changes WHERE operation_id = ?"
	if forUpdate {
		query += " FOR UPDATE"
	}
	c, err := scanStockChange(q.QueryRowContext(ctx, query, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, ErrNotFound
	}
	if err != nil {
		return c, fmt.Errorf("store: stock change %q: %w", id, err)
	}
	return c, nil
}

// InsertStockChange records c as PENDING. A restock (Delta > 0) adds its
// units to MySQL in the same transaction (tx holds the item's row lock,
// taken by GetItemForUpdate): items.total_stock, and items.stock or, for a
// bucketed item, each bucket row's stock and total by spread (one entry per
// bucket). A withdraw only records the intent. A duplicate operation id is
// IsDuplicate.
func InsertStockChange(ctx context.Context, tx *sql.Tx, it Item, c StockChange, spread []int64) error {
	if c.Delta > 0 && it.TotalStock+c.Delta > MaxStock {
		return fmt.Errorf("%w: item %d has %d units, %d more would exceed %d", ErrStockLimit, it.ID, it.TotalStock, c.Delta, MaxStock)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO stock_changes (operation_id, item_id, delta, buckets) VALUES (?, ?, ?, ?)",
		c.OperationID, c.ItemID, c.Delta, c.Buckets); err != nil {
		return fmt.Errorf("store: record stock change %q: %w", c.OperationID, err)
	}
	if c.Delta < 0 {
		return nil
	}
	return changeStockRows(ctx, tx, it, spread)
}

// ApplyWithdraw finishes a withdraw whose Redis take ran: taken[b] units
// leave bucket b's row (stock and total together) and items.total_stock,
// and the row becomes APPLIED with minus their sum. tx holds the item's row
// lock. A row with fewer units than Redis took (Redis above MySQL, a broken
// invariant) gives what it has: Redis is then below MySQL, which leaves
// units unsold until a warm, never sells one twice. It returns the units
// MySQL gave (signed, <= 0), or, when another applier finished the change
// first, its Applied.
func ApplyWithdraw(ctx context.Context, tx *sql.Tx, it Item, id string, taken []int64) (int64, error) {
	c, err := GetStockChange(ctx, tx, id, true)
	if err != nil {
		return 0, err
	}
	if c.State == StockChangeApplied {
		return c.Applied, nil
	}
	rows := make([]int64, max(it.Buckets, 1))
	if it.Bucketed() {
		br, err := BucketRows(ctx, tx, it.ID, true)
		if err != nil {
			return 0, err
		}
		for _, r := range br {
			if r.Bucket < len(rows) {
				rows[r.Bucket] = r.Stock
			}
		}
	} else {
		rows[0] = it.Stock
	}
	gave := make([]int64, len(rows))
	var sum int64
	for b, t := range taken {
		if b >= len(rows) {
			break
		}
		gave[b] = -min(t, rows[b])
		sum += gave[b]
	}
	if err := changeStockRows(ctx, tx, it, gave); err != nil {
		return 0, err
	}
	if err := markStockChange(ctx, tx, id, sum); err != nil {
		return 0, err
	}
	return sum, nil
}

// MarkStockChangeApplied records that a restock's Redis give ran: PENDING
// -> APPLIED with its delta. Marking twice is harmless (a CAS on the state).
func MarkStockChangeApplied(ctx context.Context, q Querier, id string, applied int64) error {
	return markStockChange(ctx, q, id, applied)
}

func markStockChange(ctx context.Context, q Querier, id string, applied int64) error {
	if _, err := q.ExecContext(ctx, "UPDATE stock_changes SET state = 'APPLIED', applied = ?, applied_at = NOW(3) WHERE operation_id = ? AND state = 'PENDING'",
		applied, id); err != nil {
		return fmt.Errorf("store: mark stock change %q: %w", id, err)
	}
	return nil
}

// changeStockRows adds d[b] (signed) to bucket b's stock and total, or, for
// an unbucketed item, d[0] to items.stock, and their sum to
// items.total_stock.
func changeStockRows(ctx context.Context, tx *sql.Tx, it Item, d []int64) error {
	var sum int64
	for b, n := range d {
		sum += n
		if !it.Bucketed() || n == 0 {
			continue
		}
		res, err := tx.ExecContext(ctx, "UPDATE item_buckets SET stock = stock + ?, total_stock = total_stock + ? WHERE item_id = ? AND bucket = ?",
			n, n, it.ID, b)
		if err != nil {
			return fmt.Errorf("store: change stock of item %d bucket %d: %w", it.ID, b, err)
		}
		if k, err := res.RowsAffected(); err != nil || k != 1 {
			return fmt.Errorf("store: change stock of item %d bucket %d: %w: stock row missing (%v)", it.ID, b, ErrInvariant, err)
		}
	}
	query := "UPDATE items SET stock = stock + ?, total_stock = total_stock + ? WHERE id = ?"
	args := []any{sum, sum, it.ID}
	if it.Bucketed() {
		query, args = "UPDATE items SET total_stock = total_stock + ? WHERE id = ?", []any{sum, it.ID}
	}
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("store: change stock of item %d: %w", it.ID, err)
	}
	return nil
}

// PendingStockChanges returns the changes still PENDING, oldest first, up
// to limit (the reaper's repair, and the audit with itemID > 0: that item's
// only).
func PendingStockChanges(ctx context.Context, q Querier, itemID int64, limit int) ([]StockChange, error) {
	query, args := "SELECT "+stockChangeCols+" FROM stock_changes WHERE state = 'PENDING' ORDER BY created_at, operation_id LIMIT ?", []any{limit}
	if itemID > 0 {
		query = "SELECT " + stockChangeCols + " FROM stock_changes WHERE state = 'PENDING' AND item_id = ? ORDER BY created_at, operation_id LIMIT ?"
		args = []any{itemID, limit}
	}
	out, err := sqlrows.List(ctx, q, query, args, scanStockChange)
	if err != nil {
		return nil, fmt.Errorf("store: pending stock changes: %w", err)
	}
	return out, nil
}

// ErrStockChangesPending is returned when an item's stock rows may not be
// rewritten (a PUT of a new stock or bucket count, a warm) because a stock
// change of it is PENDING: it has changed one store and not yet the other,
// and a copy of MySQL would give its units twice or not take them.
var ErrStockChangesPending = errors.New("store: stock changes not finished")

// PendingStockChangesOf counts item's PENDING stock changes.
func PendingStockChangesOf(ctx context.Context, q Querier, itemID int64) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM stock_changes WHERE state = 'PENDING' AND item_id = ?", itemID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: pending stock changes of %d: %w", itemID, err)
	}
	return n, nil
}

// RefusePendingStockChanges returns ErrStockChangesPending when item has a
// PENDING stock change (read in the caller's transaction, the item's row
// locked, so none can start meanwhile).
func RefusePendingStockChanges(ctx context.Context, q Querier, itemID int64) error {
	n, err := PendingStockChangesOf(ctx, q, itemID)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: item %d has %d pending; the reaper finishes them on its next pass, or repeat their POST .../stock with the same operation_id",
			ErrStockChangesPending, itemID, n)
	}
	return nil
}
