package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// A bucketed item (items.buckets > 1) keeps its stock in item_buckets rows,
// one per bucket, and items.stock at 0. Each row answers for its stock plus
// the live orders attributed to it (orders.bucket MOD items.buckets), which
// is its total_stock; transfers between buckets (transfers.go) move stock
// and total together, so stock + live = total holds per bucket as it does
// per item.

// StockRow is one bucket's MySQL stock row.
type StockRow struct {
	Bucket     int
	TotalStock int64
	Stock      int64
}

// BucketRows returns the item_buckets rows of item, in bucket order (none
// for an unbucketed item). forUpdate locks them until tx ends.
func BucketRows(ctx context.Context, q Querier, itemID int64, forUpdate bool) ([]StockRow, error) {
	query := "SELECT bucket, total_stock, stock FROM item_buckets WHERE item_id = ? ORDER BY bucket"
	if forUpdate {
		query += " FOR UPDATE"
	}
	out, err := sqlrows.List(ctx, q, query, []any{itemID}, func(row sqlrows.Row) (StockRow, error) {
		var r StockRow
		err := row.Scan(&r.Bucket, &r.TotalStock, &r.Stock)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: buckets of %d: %w", itemID, err)
	}
	return out, nil
}

// LockStockRow locks the stock row of bucket of it (items for an unbucketed
// item) until tx ends and returns its stock: nobody else may take stock from
// that row while the caller decides who fits.
func LockStockRow(ctx context.Context, tx *sql.Tx, it Item, bucket int) (int64, error) {
	query, args := "SELECT stock FROM items WHERE id = ? FOR UPDATE", []any{it.ID}
	if it.Bucketed() {
		query, args = "SELECT stock FROM item_buckets WHERE item_id = ? AND bucket = ? FOR UPDATE", []any{it.ID, StockRowOf(it, bucket)}
	}
	var n int64
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		if isNoRows(err) {
			return 0, fmt.Errorf("store: lock stock of item %d bucket %d: %w", it.ID, bucket, ErrNotFound)
		}
		return 0, fmt.Errorf("store: lock stock of item %d bucket %d: %w", it.ID, bucket, err)
	}
	return n, nil
}

// StockRowOf is the bucket row of it that stands for bucket: the bucket
// itself, or, after the item was re-bucketed to fewer buckets, the one it is
// attributed to now (bucket MOD buckets, as the per-bucket totals count
// orders). A request admitted in an old bucket just before a re-bucketing
// warm, and a cancelled order of one, so still find a row. 0 for an
// unbucketed item, whose row is items.
func StockRowOf(it Item, bucket int) int {
	if !it.Bucketed() {
		return 0
	}
	return bucket % it.Buckets
}

// addStock gives qty back to the stock row of bucket of it (a cancel).
func addStock(ctx context.Context, q Querier, it Item, bucket int, qty int64) error {
	query, args := "UPDATE items SET stock = stock + ? WHERE id = ?", []any{qty, it.ID}
	if it.Bucketed() {
		query = "UPDATE item_buckets SET stock = stock + ? WHERE item_id = ? AND bucket = ?"
		args = []any{qty, it.ID, bucket}
	}
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("store: restore stock of item %d bucket %d: %w", it.ID, bucket, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: restore stock of item %d bucket %d: %w", it.ID, bucket, err)
	} else if n != 1 {
		return fmt.Errorf("store: restore stock of item %d bucket %d: %w: stock row missing", it.ID, bucket, ErrInvariant)
	}
	return nil
}

// rebucket lays the remaining stock of it (locked by the caller, no
// reservation pending, no transfer open) out over n buckets: evenly, with
// each bucket's total its stock plus the live orders now attributed to it.
// With n = 1 the stock goes back to items.stock and the rows are deleted.
func rebucket(ctx context.Context, tx *sql.Tx, it Item, n int) error {
	remaining := it.Stock // items.stock + the buckets' rows (itemCols)
	if _, err := tx.ExecContext(ctx, "DELETE FROM item_buckets WHERE item_id = ?", it.ID); err != nil {
		return fmt.Errorf("store: re-bucket item %d: %w", it.ID, err)
	}
	if n <= 1 {
		_, err := tx.ExecContext(ctx, "UPDATE items SET stock = ?, buckets = 1 WHERE id = ?", remaining, it.ID)
		if err != nil {
			return fmt.Errorf("store: re-bucket item %d: %w", it.ID, err)
		}
		return nil
	}
	live := make([]int64, n)
	err := sqlrows.Each(ctx, tx,
		"SELECT bucket MOD ?, COALESCE(SUM(qty), 0) FROM orders WHERE item_id = ? AND status <> 'CANCELLED' GROUP BY bucket MOD ?", []any{n, it.ID, n},
		func(r sqlrows.Row) error {
			var b int
			var q int64
			if err := r.Scan(&b, &q); err != nil {
				return err
			}
			live[b] = q
			return nil
		})
	if err != nil {
		return fmt.Errorf("store: re-bucket item %d: %w", it.ID, err)
	}
	for b := range n {
		st := remaining / int64(n)
		if int64(b) < remaining%int64(n) {
			st++
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO item_buckets (item_id, bucket, total_stock, stock) VALUES (?, ?, ?, ?)",
			it.ID, b, st+live[b], st); err != nil {
			return fmt.Errorf("store: re-bucket item %d: %w", it.ID, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET stock = 0, buckets = ? WHERE id = ?", n, it.ID); err != nil {
		return fmt.Errorf("store: re-bucket item %d: %w", it.ID, err)
	}
	return nil
}
