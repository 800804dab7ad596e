package audit

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// readSnapshot reads the MySQL side of the item, after its Redis cut c, in
// one read-only REPEATABLE READ transaction: the item's row, its orders and
// the counting checks, the restores not yet marked (counted as not in
// Redis unless the cut saw their guard), the outcomes of the reservations
// the cut saw, and a bucketed item's rows, orders by bucket and open
// transfers. One snapshot, so no consumer or reaper commit falls between
// two of these reads (cut.go says why it comes after the cut).
func readSnapshot(ctx context.Context, db *sql.DB, c cut, n *numbers, rep *Report) (err error) {
	itemID := n.item.ID
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("audit: snapshot of %d: %w", itemID, err)
	}
	defer func() {
		if cerr := tx.Commit(); cerr != nil && err == nil {
			err = fmt.Errorf("audit: snapshot of %d: %w", itemID, cerr)
		}
	}()
	// The item's stock and total as of the snapshot; its layout (buckets,
	// queue) stays what the cut was read by.
	it, err := store.GetItem(ctx, tx, itemID)
	if err != nil {
		return err
	}
	n.item.Stock, n.item.TotalStock = it.Stock, it.TotalStock
	if err := readOrders(ctx, tx, itemID, rep); err != nil {
		return err
	}
	if err := readChecks(ctx, tx, itemID, n, rep); err != nil {
		return err
	}
	buckets := max(n.item.Buckets, 1)
	if n.item.Bucketed() {
		n.buckets.unapplied = map[int]int64{}
	}
	unmarked, err := store.UnappliedRestoresOf(ctx, tx, itemID)
	if err != nil {
		return err
	}
	for _, o := range unmarked {
		if c.restored[o.RequestID] {
			continue // in Redis at the cut: counted in its stock or waitlist
		}
		n.unappliedRestore += int64(o.Qty)
		if n.item.Bucketed() {
			n.buckets.unapplied[o.Bucket%buckets] += int64(o.Qty)
		}
	}
	if err := readOrdered(ctx, tx, c, n); err != nil {
		return err
	}
	if n.item.Bucketed() {
		return readBuckets(ctx, tx, itemID, buckets, &n.buckets)
	}
	return nil
}

func readOrders(ctx context.Context, q store.Querier, itemID int64, rep *Report) error {
	err := sqlrows.Each(ctx, q, "SELECT status, COALESCE(SUM(qty), 0) FROM orders WHERE item_id = ? GROUP BY status", []any{itemID},
		func(r sqlrows.Row) error {
			var status string
			var qty int64
			if err := r.Scan(&status, &qty); err != nil {
				return err
			}
			switch store.OrderStatus(status) {
			case store.Unpaid:
				rep.Unpaid = qty
			case store.Paid:
				rep.Paid = qty
			case store.Cancelled:
				rep.Cancelled = qty
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("audit: orders of %d: %w", itemID, err)
	}
	return nil
}

// readChecks runs the counting queries of I2, I4, I5 and I6 in one round
// trip, and counts the item's item_buckets rows (an unbucketed item has none).
func readChecks(ctx context.Context, q store.Querier, itemID int64, n *numbers, rep *Report) error {
	const query = `SELECT
 (SELECT COUNT(*) FROM request_outcomes WHERE item_id = ? AND outcome <> 'ORDERED'),
 (SELECT COUNT(*) FROM (SELECT user_id FROM orders WHERE item_id = ? GROUP BY user_id HAVING COUNT(*) > 1) d),
 (SELECT COUNT(*) FROM request_outcomes ro LEFT JOIN orders o ON o.request_id = ro.request_id
    WHERE ro.item_id = ? AND ro.outcome = 'ORDERED' AND o.id IS NULL),
 (SELECT COUNT(*) FROM orders o LEFT JOIN request_outcomes ro ON ro.request_id = o.request_id
    WHERE o.item_id = ? AND (ro.request_id IS NULL OR ro.outcome <> 'ORDERED')),
 (SELECT COUNT(*) FROM orders o LEFT JOIN stock_restores r ON r.order_id = o.id
    WHERE o.item_id = ? AND o.status = 'CANCELLED' AND r.order_id IS NULL),
 (SELECT COUNT(*) FROM stock_restores r JOIN orders o ON o.id = r.order_id
    WHERE r.item_id = ? AND o.status <> 'CANCELLED'),
 (SELECT COUNT(*) FROM orders WHERE item_id = ? AND paid_at IS NOT NULL AND (status = 'CANCELLED' OR cancelled_at IS NOT NULL)),
 (SELECT COUNT(*) FROM item_buckets WHERE item_id = ?)`
	err := q.QueryRowContext(ctx, query, itemID, itemID, itemID, itemID, itemID, itemID, itemID, itemID).Scan(
		&rep.Rejected, &n.dupBuyers, &n.orderedNoOrder, &n.orderNoOutcome,
		&n.cancelNoRestore, &n.restoreNoCancel, &n.paidAndCancelled, &n.bucketRows)
	if err != nil {
		return fmt.Errorf("audit: checks of %d: %w", itemID, err)
	}
	return nil
}

// readOrdered finds the reservations of the cut whose request the snapshot
// already decided ORDERED: they are counted both as pending and as orders
// until the consumer settles them. They are also counted per bucket, in the
// bucket their request id names (the bucket that reserved them).
func readOrdered(ctx context.Context, q store.Querier, c cut, n *numbers) error {
	qty := make(map[string]int, len(c.reservations))
	ids := make([]string, 0, len(c.reservations))
	for _, r := range c.reservations {
		if _, dup := qty[r.RequestID]; !dup {
			ids = append(ids, r.RequestID)
		}
		qty[r.RequestID] = r.Qty
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 1000)]
		ids = ids[len(chunk):]
		decided, err := store.DecidedAmong(ctx, q, chunk)
		if err != nil {
			return err
		}
		for id, o := range decided {
			if o != store.Ordered {
				continue
			}
			n.orderedPending += int64(qty[id])
			if n.buckets.orderedPending == nil {
				n.buckets.orderedPending = map[int]int64{}
			}
			n.buckets.orderedPending[reqid.Bucket(id)] += int64(qty[id])
		}
	}
	return nil
}
