package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// ErrInvariant is returned (and the transaction rolled back) when rows the
// reaper holds locks on do not look as they must: a locked UNPAID order that
// the status CAS did not change, or an order whose item row is missing.
var ErrInvariant = errors.New("store: invariant broken")

// CancelExpired claims up to limit UNPAID orders whose payment window has
// passed, cancels them, gives their qty back to items.stock and writes one
// stock_restores row per order, all in one transaction, and returns the
// cancelled orders (status Cancelled) so the caller can apply the Redis side.
//
// Why it is shaped like this:
//   - "Passed" is judged by the database's clock (expires_at <= NOW(3)), the
//     same clock the pay CAS uses (expires_at > NOW(3)), so pay and cancel can
//     never disagree about a deadline and no host clock is involved: the
//     function takes no time argument on purpose.
//   - FOR UPDATE SKIP LOCKED lets several reaper replicas claim disjoint
//     batches without waiting on each other, and skips an order a pay is
//     updating right now: that pay either commits PAID, or changes nothing
//     and a later pass cancels the order.
//   - READ COMMITTED: no gap or next-key locks on the (status, expires_at)
//     range, so the claim never blocks the consumer inserting new UNPAID
//     orders behind it.
//   - The status CAS (AND status = 'UNPAID') is the exclusion with pay (I6);
//     since the rows are locked it must match every claimed row, and anything
//     else is treated as a broken invariant and rolled back.
//   - The stock restore and the restore record commit with the cancel, so
//     MySQL gets the qty back exactly once (I5) and the restore record drives
//     the Redis side until it is done.
//
// Items are updated in id order so that concurrent reapers lock item rows in
// the same order and cannot deadlock on each other.
func CancelExpired(ctx context.Context, db *sql.DB, limit int) ([]Order, error) {
	var out []Order
	err := RunInTx(ctx, db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		var err error
		out, err = sqlrows.List(ctx, tx,
			"SELECT id, request_id, user_id, item_id, bucket, qty, price_cents, created_at, expires_at FROM orders"+
				" WHERE status = 'UNPAID' AND expires_at <= NOW(3) ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED", []any{limit},
			func(r sqlrows.Row) (Order, error) {
				var o Order
				err := r.Scan(&o.ID, &o.RequestID, &o.UserID, &o.ItemID, &o.Bucket, &o.Qty, &o.PriceCents, &o.CreatedAt, &o.ExpiresAt)
				return o, err
			})
		if err != nil {
			return fmt.Errorf("store: claim expired: %w", err)
		}
		if len(out) == 0 {
			return nil
		}

		ids := make([]any, len(out))
		for i, o := range out {
			ids[i] = o.ID
		}
		res, err := tx.ExecContext(ctx,
			"UPDATE orders SET status = 'CANCELLED', cancelled_at = NOW(3) WHERE id IN ("+placeholders(len(ids))+") AND status = 'UNPAID'",
			ids...)
		if err != nil {
			return fmt.Errorf("store: cancel expired: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("store: cancel expired: %w", err)
		} else if n != int64(len(out)) {
			return fmt.Errorf("store: cancel expired: %w: %d of %d locked orders changed", ErrInvariant, n, len(out))
		}

		if err := restoreToBuckets(ctx, tx, out); err != nil {
			return err
		}

		var sb strings.Builder
		sb.WriteString("INSERT INTO stock_restores (order_id, item_id, bucket, qty) VALUES ")
		args := make([]any, 0, 4*len(out))
		for i, o := range out {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?)")
			args = append(args, o.ID, o.ItemID, o.Bucket, o.Qty)
		}
		if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("store: record restores: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Status = Cancelled
	}
	return out, nil
}

// restoreToBuckets gives the cancelled orders' qty back to their stock rows
// and sets each order's Bucket to the bucket it went back to
// (StockRowOf). The rows are updated in (item, bucket) order so that
// concurrent reapers lock them in the same order and cannot deadlock.
func restoreToBuckets(ctx context.Context, tx *sql.Tx, orders []Order) error {
	items := map[int64]Item{}
	for _, o := range orders {
		if _, ok := items[o.ItemID]; ok {
			continue
		}
		it, err := GetItem(ctx, tx, o.ItemID)
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("store: restore stock of item %d: %w: item row missing", o.ItemID, ErrInvariant)
		}
		if err != nil {
			return err
		}
		items[o.ItemID] = it
	}
	type row struct {
		item   int64
		bucket int
	}
	qty := map[row]int64{}
	for i := range orders {
		o := &orders[i]
		o.Bucket = StockRowOf(items[o.ItemID], o.Bucket)
		qty[row{o.ItemID, o.Bucket}] += int64(o.Qty)
	}
	keys := make([]row, 0, len(qty))
	for k := range qty {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b row) int {
		if a.item != b.item {
			return cmp.Compare(a.item, b.item)
		}
		return cmp.Compare(a.bucket, b.bucket)
	})
	for _, k := range keys {
		if err := addStock(ctx, tx, items[k.item], k.bucket, qty[k]); err != nil {
			return err
		}
	}
	return nil
}

// ExpiredBacklog counts UNPAID orders past their deadline (database clock),
// at most max of them: an index range count on (status, expires_at), capped
// so that a huge backlog cannot make the gauge itself expensive.
func ExpiredBacklog(ctx context.Context, q Querier, max int) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM (SELECT 1 FROM orders WHERE status = 'UNPAID' AND expires_at <= NOW(3) LIMIT ?) AS backlog", max).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: expired backlog: %w", err)
	}
	return n, nil
}

// SessionClockSkew returns NOW(3) - UTC_TIMESTAMP(3) of a connection of q.
// Stored times are UTC and deadlines are judged by NOW(3), so anything but
// zero means the session time zone is not UTC and NOW(3) would cancel early
// (or late) by that much; the reaper refuses to start then.
func SessionClockSkew(ctx context.Context, q Querier) (time.Duration, error) {
	var ms int64
	err := q.QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), NOW(3)) DIV 1000").Scan(&ms)
	if err != nil {
		return 0, fmt.Errorf("store: session clock: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
