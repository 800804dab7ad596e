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
//
// The live auditor runs them for every watched item every interval, and
// each reads every order of the item, so they are written to read as little
// per order as they can:
//   - rejections by the outcomes they are (a range of the (item_id,
//     outcome) index), not every outcome but ORDERED (the whole item);
//   - I4 as one join, not two anti-joins: the ORDERED outcomes of the item
//     paired with the item's order of the same request are counted once,
//     and the outcomes and the orders left over are the two violations (the
//     request id is unique in both tables, so a pair is one of each). An
//     order whose ORDERED outcome names another item is now left over too;
//   - I2 by MySQL's own unique key on (user_id, item_id) while the schema
//     has it (oneOrderPerBuyerKey): no second order of a buyer can exist,
//     so grouping every order by buyer, each pass, counted what the key
//     forbids. Without the key (a schema an operator changed) it groups.
//
// On an item of 60,000 orders the old queries took 567–685 ms of MariaDB a
// pass (45% the two anti-joins, 14% the grouping), these 394–444 ms
// (BENCHMARKS.md, "The live audit's checks").
func readChecks(ctx context.Context, q store.Querier, itemID int64, n *numbers, rep *Report) error {
	const query = `SELECT
 (SELECT COUNT(*) FROM request_outcomes WHERE item_id = ? AND outcome IN ('REJECTED', 'ABORTED', 'VOIDED')),
 (SELECT COUNT(*) FROM request_outcomes WHERE item_id = ? AND outcome = 'ORDERED'),
 (SELECT COUNT(*) FROM orders WHERE item_id = ?),
 (SELECT COUNT(*) FROM orders o JOIN request_outcomes ro
    ON ro.request_id = o.request_id AND ro.item_id = o.item_id AND ro.outcome = 'ORDERED'
    WHERE o.item_id = ?),
 (SELECT COUNT(*) FROM orders o LEFT JOIN stock_restores r ON r.order_id = o.id
    WHERE o.item_id = ? AND o.status = 'CANCELLED' AND r.order_id IS NULL),
 (SELECT COUNT(*) FROM stock_restores r JOIN orders o ON o.id = r.order_id
    WHERE r.item_id = ? AND o.status <> 'CANCELLED'),
 (SELECT COUNT(*) FROM orders WHERE item_id = ? AND paid_at IS NOT NULL AND (status = 'CANCELLED' OR cancelled_at IS NOT NULL)),
 (SELECT COUNT(*) FROM item_buckets WHERE item_id = ?)`
	var ordered, orders, paired int64
	err := q.QueryRowContext(ctx, query, itemID, itemID, itemID, itemID, itemID, itemID, itemID, itemID).Scan(
		&rep.Rejected, &ordered, &orders, &paired,
		&n.cancelNoRestore, &n.restoreNoCancel, &n.paidAndCancelled, &n.bucketRows)
	if err != nil {
		return fmt.Errorf("audit: checks of %d: %w", itemID, err)
	}
	n.orderedNoOrder, n.orderNoOutcome = ordered-paired, orders-paired
	keyed, err := oneOrderPerBuyerKey(ctx, q)
	if err != nil {
		return fmt.Errorf("audit: checks of %d: %w", itemID, err)
	}
	if keyed {
		n.dupBuyers = 0
		return nil
	}
	err = q.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT user_id FROM orders WHERE item_id = ? GROUP BY user_id HAVING COUNT(*) > 1) d`, itemID).Scan(&n.dupBuyers)
	if err != nil {
		return fmt.Errorf("audit: buyers of %d: %w", itemID, err)
	}
	return nil
}

// oneOrderPerBuyerKey reports whether the orders table has a unique key on
// exactly (user_id, item_id), in either order: schema/0001_init.sql's
// orders_user_item, under which MySQL refuses a buyer's second order of an
// item, so I2 holds by the key.
func oneOrderPerBuyerKey(ctx context.Context, q store.Querier) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM (
  SELECT INDEX_NAME FROM information_schema.STATISTICS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'orders' AND NON_UNIQUE = 0
  GROUP BY INDEX_NAME
  HAVING COUNT(*) = 2 AND SUM(COLUMN_NAME IN ('user_id', 'item_id')) = 2) k`).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("the orders table's unique keys: %w", err)
	}
	return n > 0, nil
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
