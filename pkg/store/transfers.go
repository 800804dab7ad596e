package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// A transfer moves qty units of a bucketed item from one bucket to another,
// in MySQL (the two item_buckets rows, stock and total_stock together) and in
// Redis (the two buckets' stock keys, pkg/rebalance). Its stock_transfers
// row says how far it got, so whoever finds it open finishes it:
//
//	PLANNED   -> the Redis take from the donor may or may not have run
//	MOVED     -> MySQL moved stock and total; the Redis give may not have run
//	DONE      -> both stores moved
//	ABANDONED -> the donor had too little in Redis: nothing moved anywhere;
//	             or too little free in MySQL (a broken invariant): nothing
//	             moved in MySQL, and the Redis donor got the qty back,
//	             reconciled down to MySQL's stock (MoveTransfer)
//
// A MOVED or DONE transfer's qty is what moved: less than planned when
// MySQL's donor had less than Redis took (MoveTransfer).
//
// Every state change is a CAS on the state, so two drivers of one transfer
// change each row once.

// TransferState is a stock_transfers.state.
type TransferState string

// The states of a transfer.
const (
	TransferPlanned   TransferState = "PLANNED"
	TransferMoved     TransferState = "MOVED"
	TransferDone      TransferState = "DONE"
	TransferAbandoned TransferState = "ABANDONED"
)

// Open reports whether the transfer still has a step to run.
func (s TransferState) Open() bool { return s == TransferPlanned || s == TransferMoved }

// Transfer is one stock_transfers row.
type Transfer struct {
	ID       int64
	ItemID   int64
	From, To int
	Qty      int64
	State    TransferState
	// CreatedAt (ms) tells this transfer from one of an earlier database
	// that had the same AUTO_INCREMENT id (pkg/rebalance names its Redis
	// guards by both).
	CreatedAt time.Time
}

// ErrBucketsChanged is returned by PlanTransfer when the item no longer has
// the bucket count the plan was made for (re-bucketed between sales).
var ErrBucketsChanged = errors.New("store: bucket count changed")

const transferCols = "id, item_id, from_bucket, to_bucket, qty, state, created_at"

func scanTransfer(row interface{ Scan(...any) error }) (Transfer, error) {
	var t Transfer
	var st string
	if err := row.Scan(&t.ID, &t.ItemID, &t.From, &t.To, &t.Qty, &st, &t.CreatedAt); err != nil {
		return t, err
	}
	t.State = TransferState(st)
	return t, nil
}

// PlanTransfer records a transfer of qty from bucket from to bucket to of
// item, which the caller found with buckets buckets, and returns it
// PLANNED.
//
// It holds a shared lock on the item's row while it inserts. A warm (and a
// re-bucketing) locks that row exclusively and refuses while a transfer is
// open, so a transfer is either planned before a warm starts, and the warm
// refuses, or after it has committed, and the transfer moves the stock the
// warm wrote. Without the lock a warm could copy MySQL's donor stock over a
// Redis take that MySQL has not seen yet, and the units would be given
// twice.
func PlanTransfer(ctx context.Context, db *sql.DB, itemID int64, buckets, from, to int, qty int64) (Transfer, error) {
	if from == to || from < 0 || to < 0 || from >= buckets || to >= buckets || qty < 1 {
		return Transfer{}, fmt.Errorf("store: plan transfer of item %d %d->%d qty %d of %d buckets: bad arguments", itemID, from, to, qty, buckets)
	}
	var t Transfer
	err := RunInTx(ctx, db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		var n int
		err := tx.QueryRowContext(ctx, "SELECT buckets FROM items WHERE id = ? LOCK IN SHARE MODE", itemID).Scan(&n)
		if isNoRows(err) {
			return fmt.Errorf("store: plan transfer of item %d: %w", itemID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: plan transfer of item %d: %w", itemID, err)
		}
		if n != buckets {
			return fmt.Errorf("store: plan transfer of item %d: %w: %d buckets, planned for %d", itemID, ErrBucketsChanged, n, buckets)
		}
		res, err := tx.ExecContext(ctx,
			"INSERT INTO stock_transfers (item_id, from_bucket, to_bucket, qty) VALUES (?, ?, ?, ?)", itemID, from, to, qty)
		if err != nil {
			return fmt.Errorf("store: plan transfer of item %d: %w", itemID, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("store: plan transfer of item %d: %w", itemID, err)
		}
		t, err = scanTransfer(tx.QueryRowContext(ctx, "SELECT "+transferCols+" FROM stock_transfers WHERE id = ?", id))
		if err != nil {
			return fmt.Errorf("store: plan transfer of item %d: read back %d: %w", itemID, id, err)
		}
		return nil
	})
	return t, err
}

// GetTransfer reads one transfer (ErrNotFound when there is none).
func GetTransfer(ctx context.Context, q Querier, id int64) (Transfer, error) {
	t, err := scanTransfer(q.QueryRowContext(ctx, "SELECT "+transferCols+" FROM stock_transfers WHERE id = ?", id))
	if isNoRows(err) {
		return t, fmt.Errorf("store: transfer %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("store: transfer %d: %w", id, err)
	}
	return t, nil
}

// OpenTransfers returns up to limit transfers that are PLANNED or MOVED,
// oldest first: the work a crashed or interrupted mover left.
func OpenTransfers(ctx context.Context, q Querier, limit int) ([]Transfer, error) {
	rows, err := q.QueryContext(ctx,
		"SELECT "+transferCols+" FROM stock_transfers WHERE state IN ('PLANNED','MOVED') ORDER BY id LIMIT ?", limit)
	if err != nil {
		return nil, fmt.Errorf("store: open transfers: %w", err)
	}
	defer rows.Close()
	var out []Transfer
	for rows.Next() {
		t, err := scanTransfer(rows)
		if err != nil {
			return nil, fmt.Errorf("store: open transfers: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: open transfers: %w", err)
	}
	return out, nil
}

// OpenTransfersOfItem returns up to limit of item's open transfers, oldest
// first: what a warm names when it refuses.
func OpenTransfersOfItem(ctx context.Context, q Querier, itemID int64, limit int) ([]Transfer, error) {
	rows, err := q.QueryContext(ctx,
		"SELECT "+transferCols+" FROM stock_transfers WHERE item_id = ? AND state IN ('PLANNED','MOVED') ORDER BY id LIMIT ?", itemID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: open transfers of %d: %w", itemID, err)
	}
	defer rows.Close()
	var out []Transfer
	for rows.Next() {
		t, err := scanTransfer(rows)
		if err != nil {
			return nil, fmt.Errorf("store: open transfers of %d: %w", itemID, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: open transfers of %d: %w", itemID, err)
	}
	return out, nil
}

// OpenTransferAge counts item's open transfers and says how long ago, by
// MySQL's clock (which stamped created_at), the oldest was planned (0 with
// none). A transfer runs in milliseconds; one open for a minute is stuck.
func OpenTransferAge(ctx context.Context, q Querier, itemID int64) (int64, time.Duration, error) {
	var n, us int64
	err := q.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(created_at), NOW(3)), 0)"+
		" FROM stock_transfers WHERE item_id = ? AND state IN ('PLANNED','MOVED')", itemID).Scan(&n, &us)
	if err != nil {
		return 0, 0, fmt.Errorf("store: open transfer age of %d: %w", itemID, err)
	}
	return n, time.Duration(max(us, 0)) * time.Microsecond, nil
}

// AbandonTransfer marks a PLANNED transfer ABANDONED (the donor was short in
// Redis, so nothing moved) and reports whether this call changed it.
func AbandonTransfer(ctx context.Context, q Querier, id int64) (bool, error) {
	return casTransfer(ctx, q, id, TransferPlanned, TransferAbandoned)
}

// CompleteTransfer marks a MOVED transfer DONE (Redis gave the units to the
// recipient) and reports whether this call changed it.
func CompleteTransfer(ctx context.Context, q Querier, id int64) (bool, error) {
	return casTransfer(ctx, q, id, TransferMoved, TransferDone)
}

func casTransfer(ctx context.Context, q Querier, id int64, from, to TransferState) (bool, error) {
	res, err := q.ExecContext(ctx, "UPDATE stock_transfers SET state = ? WHERE id = ? AND state = ?", string(to), id, string(from))
	if err != nil {
		return false, fmt.Errorf("store: transfer %d %s -> %s: %w", id, from, to, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: transfer %d %s -> %s: %w", id, from, to, err)
	}
	return n == 1, nil
}

// CutFunc is the Redis side of a transfer's MySQL step (pkg/stock's
// TransferCutTo), run while MoveTransfer holds the transfer's row and both
// bucket rows locked. free is MySQL's donor stock less the restores Redis
// has not applied yet, short whether the donor row holds less than the
// transfer's qty. It returns the qty to move: the transfer's qty normally,
// less (down to 0) when Redis took units MySQL's donor does not have. Its
// decision must stick: once it cut a transfer it answers the same.
type CutFunc func(ctx context.Context, free int64, short bool) (int64, error)

// Moved is what MoveTransfer did: Won is false when another driver had
// already moved the transfer past PLANNED (nothing changed). Otherwise
// State is MOVED with Qty the qty moved (the transfer's, or less when it
// was cut), or ABANDONED when the cut left nothing to move.
type Moved struct {
	Won   bool
	State TransferState
	Qty   int64
}

// MoveTransfer runs the MySQL step of t (which Redis has taken out of the
// donor): in one READ COMMITTED transaction, PLANNED -> MOVED, and the qty
// off the donor's stock and total and onto the recipient's.
//
// The state CAS comes first and locks the transfer's row, so of two
// drivers racing only one moves; the other then finds it past PLANNED. The two bucket rows are
// locked next, in bucket order, so transfers never deadlock on each other,
// and no consumer or reaper changes the donor's stock while cut decides.
// A donor row with less than the qty is a broken invariant (Redis took units
// MySQL does not have, as after a Redis failover without WAIT): the transfer
// moves what MySQL has free (cut, which also reconciles the Redis donor
// down to MySQL), so it still ends, DONE with a smaller qty or ABANDONED
// with nothing to move, instead of staying PLANNED for ever. A missing
// bucket row is ErrInvariant and changes nothing.
func MoveTransfer(ctx context.Context, db *sql.DB, t Transfer, cut CutFunc) (Moved, error) {
	var out Moved
	err := RunInTx(ctx, db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		out = Moved{}
		// The CAS first: it locks the row, and a driver that loses it
		// touches nothing else. The cut below may still turn the row
		// ABANDONED, or lower its qty, before the commit.
		ok, err := casTransfer(ctx, tx, t.ID, TransferPlanned, TransferMoved)
		if err != nil || !ok {
			return err
		}
		donor, err := lockTransferRows(ctx, tx, t)
		if err != nil {
			return err
		}
		short, free := donor < t.Qty, donor
		if short {
			var unapplied int64
			err := tx.QueryRowContext(ctx, "SELECT COALESCE(SUM(r.qty), 0) FROM stock_restores r JOIN items i ON i.id = r.item_id"+
				" WHERE r.item_id = ? AND r.redis_applied_at IS NULL AND r.bucket MOD i.buckets = ?", t.ItemID, t.From).Scan(&unapplied)
			if err != nil {
				return fmt.Errorf("store: move transfer %d: unapplied restores: %w", t.ID, err)
			}
			free -= unapplied
		}
		qty, err := cut(ctx, free, short)
		if err != nil {
			return err
		}
		if qty < 0 || qty > t.Qty || qty > donor {
			return fmt.Errorf("store: move transfer %d of item %d: %w: cut to %d of %d, donor holds %d",
				t.ID, t.ItemID, ErrInvariant, qty, t.Qty, donor)
		}
		if qty == 0 {
			if _, err := casTransfer(ctx, tx, t.ID, TransferMoved, TransferAbandoned); err != nil {
				return err
			}
			out = Moved{Won: true, State: TransferAbandoned}
			return nil
		}
		if qty < t.Qty {
			if _, err := tx.ExecContext(ctx, "UPDATE stock_transfers SET qty = ? WHERE id = ?", qty, t.ID); err != nil {
				return fmt.Errorf("store: move transfer %d: %w", t.ID, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE item_buckets SET stock = stock - ?, total_stock = total_stock - ?"+
			" WHERE item_id = ? AND bucket = ?", qty, qty, t.ItemID, t.From); err != nil {
			return fmt.Errorf("store: move transfer %d bucket %d: %w", t.ID, t.From, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE item_buckets SET stock = stock + ?, total_stock = total_stock + ?"+
			" WHERE item_id = ? AND bucket = ?", qty, qty, t.ItemID, t.To); err != nil {
			return fmt.Errorf("store: move transfer %d bucket %d: %w", t.ID, t.To, err)
		}
		out = Moved{Won: true, State: TransferMoved, Qty: qty}
		return nil
	})
	if err != nil {
		return Moved{}, err
	}
	return out, nil
}

// lockTransferRows locks the donor's and the recipient's item_buckets rows
// of t, in bucket order, and returns the donor's stock.
func lockTransferRows(ctx context.Context, tx *sql.Tx, t Transfer) (int64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT bucket, stock FROM item_buckets WHERE item_id = ? AND bucket IN (?, ?) ORDER BY bucket FOR UPDATE",
		t.ItemID, t.From, t.To)
	if err != nil {
		return 0, fmt.Errorf("store: move transfer %d: %w", t.ID, err)
	}
	defer rows.Close()
	var donor int64
	found := 0
	for rows.Next() {
		var b int
		var st int64
		if err := rows.Scan(&b, &st); err != nil {
			return 0, fmt.Errorf("store: move transfer %d: %w", t.ID, err)
		}
		if b == t.From {
			donor = st
		}
		found++
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store: move transfer %d: %w", t.ID, err)
	}
	if found != 2 {
		return 0, fmt.Errorf("store: move transfer %d of item %d: %w: %d of the rows of buckets %d and %d",
			t.ID, t.ItemID, ErrInvariant, found, t.From, t.To)
	}
	return donor, nil
}

// RebalanceItem is a bucketed item the rebalancer looks after.
type RebalanceItem struct {
	ID      int64
	Buckets int
}

// RebalanceItems returns the bucketed items whose sale window, widened by
// margin on both sides, contains now, and those with open transfers whatever
// their window: the items whose stock may have to move, or be finished
// moving.
func RebalanceItems(ctx context.Context, q Querier, now time.Time, margin time.Duration) ([]RebalanceItem, error) {
	rows, err := q.QueryContext(ctx,
		"SELECT i.id, i.buckets FROM items i WHERE i.buckets > 1 AND ((i.starts_at <= ? AND i.ends_at > ?)"+
			" OR EXISTS (SELECT 1 FROM stock_transfers t WHERE t.item_id = i.id AND t.state IN ('PLANNED','MOVED')))"+
			" ORDER BY i.id",
		now.Add(margin).UTC(), now.Add(-margin).UTC())
	if err != nil {
		return nil, fmt.Errorf("store: rebalance items: %w", err)
	}
	defer rows.Close()
	var out []RebalanceItem
	for rows.Next() {
		var it RebalanceItem
		if err := rows.Scan(&it.ID, &it.Buckets); err != nil {
			return nil, fmt.Errorf("store: rebalance items: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: rebalance items: %w", err)
	}
	return out, nil
}
