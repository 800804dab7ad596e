package audit

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// Report is one item's audit: api.AuditReport, the JSON of the admin audit
// (and of the live view's audit), declared in pkg/api so a client of the API
// decodes it without linking this package's store clients.
type Report = api.AuditReport

// numbers gathers everything the checks need.
type numbers struct {
	item             store.Item
	redis            stock.State
	orderedPending   int64 // units of reservations already decided ORDERED
	unappliedRestore int64 // units restored in MySQL, not yet in Redis
	dupBuyers        int64
	orderedNoOrder   int64
	orderNoOutcome   int64
	cancelNoRestore  int64
	restoreNoCancel  int64
	paidAndCancelled int64
	bucketRows       int64 // item_buckets rows of the item
	// changes: the item's PENDING stock changes (stockchanges.go), and
	// whether none ran while the audit read.
	changes      changeView
	changesQuiet bool
	buckets      bucketNumbers
	waitlist     waitroom.Waitlist // zero for an item without a queue
}

// Waitlist is what an item's waitlist holds and did, in units: api.Waitlist
// (I9: in = pool + offers + claimed + returned + moving; a bucketed item's
// is the sum of its buckets' shares, each of which balances on its own).
type Waitlist = api.Waitlist

// Item audits one item; store.ErrNotFound when MySQL does not know it.
func Item(ctx context.Context, db *sql.DB, st *stock.Store, itemID int64) (Report, error) {
	var n numbers
	var rep Report
	before, err := readChanges(ctx, db, st, itemID)
	if err != nil {
		return Report{}, err
	}
	if n.item, err = store.GetItem(ctx, db, itemID); err != nil {
		return Report{}, err
	}
	read := func() error { return readItem(ctx, db, st, itemID, &n, &rep) }
	if n.item.Bucketed() {
		err = readBucketState(ctx, db, st, &n, read)
	} else {
		err = read()
	}
	if err != nil {
		return Report{}, err
	}
	if n.changes, err = readChanges(ctx, db, st, itemID); err != nil {
		return Report{}, err
	}
	n.changesQuiet = before.same(n.changes)
	rep.ItemID, rep.Total, rep.DBStock = itemID, n.item.TotalStock, n.item.Stock
	rep.RedisStock, rep.Pending, rep.PendingQty = n.redis.Stock, n.redis.Pending, n.redis.PendingQty
	rep.OldestReservedAt = n.redis.OldestReservedAt
	rep.Buckets = max(n.item.Buckets, 1)
	if n.item.Queue {
		w := n.waitlist.Report()
		rep.Waitlist = &w
	}
	rep.Violations = check(n, rep)
	if n.item.Bucketed() {
		rep.PerBucket = bucketReports(n)
		v, info := checkBuckets(n, rep.PerBucket)
		rep.Violations, rep.Info = append(rep.Violations, v...), info
	} else if n.bucketRows > 0 {
		rep.Violations = append(rep.Violations, fmt.Sprintf("I3 mysql buckets: %d item_buckets rows of an unbucketed item, want none", n.bucketRows))
	}
	if !n.changesQuiet {
		rep.Info = append(rep.Info, "a stock change (restock or withdraw) ran during the audit; the redis checks are skipped")
	}
	rep.OK = len(rep.Violations) == 0
	return rep, nil
}

// readItem reads the item-level numbers.
func readItem(ctx context.Context, db *sql.DB, st *stock.Store, itemID int64, n *numbers, rep *Report) error {
	var err error
	if n.redis, err = st.ReadState(ctx, itemID); err != nil {
		return err
	}
	if n.item.Queue {
		if n.waitlist, err = waitroom.NewStore(st).ReadShares(ctx, itemID, max(n.item.Buckets, 1)); err != nil {
			return err
		}
	}
	if err := readOrders(ctx, db, itemID, rep); err != nil {
		return err
	}
	if err := readChecks(ctx, db, itemID, n, rep); err != nil {
		return err
	}
	return readPending(ctx, db, st, itemID, n)
}

func readOrders(ctx context.Context, db *sql.DB, itemID int64, rep *Report) error {
	rows, err := db.QueryContext(ctx, "SELECT status, COALESCE(SUM(qty), 0) FROM orders WHERE item_id = ? GROUP BY status", itemID)
	if err != nil {
		return fmt.Errorf("audit: orders of %d: %w", itemID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var qty int64
		if err := rows.Scan(&status, &qty); err != nil {
			return fmt.Errorf("audit: orders of %d: %w", itemID, err)
		}
		switch store.OrderStatus(status) {
		case store.Unpaid:
			rep.Unpaid = qty
		case store.Paid:
			rep.Paid = qty
		case store.Cancelled:
			rep.Cancelled = qty
		}
	}
	return rows.Err()
}

// readChecks runs the counting queries of I2, I4, I5 and I6 in one round
// trip, and counts the item's item_buckets rows (an unbucketed item has none).
func readChecks(ctx context.Context, db *sql.DB, itemID int64, n *numbers, rep *Report) error {
	const q = `SELECT
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
 (SELECT COALESCE(SUM(qty), 0) FROM stock_restores WHERE item_id = ? AND redis_applied_at IS NULL),
 (SELECT COUNT(*) FROM item_buckets WHERE item_id = ?)`
	err := db.QueryRowContext(ctx, q, itemID, itemID, itemID, itemID, itemID, itemID, itemID, itemID, itemID).Scan(
		&rep.Rejected, &n.dupBuyers, &n.orderedNoOrder, &n.orderNoOutcome,
		&n.cancelNoRestore, &n.restoreNoCancel, &n.paidAndCancelled, &n.unappliedRestore, &n.bucketRows)
	if err != nil {
		return fmt.Errorf("audit: checks of %d: %w", itemID, err)
	}
	return nil
}

// readPending finds the reservations whose request MySQL already decided
// ORDERED: they are counted both as pending and as orders until the consumer
// settles them. They are also counted per bucket, in the bucket their
// request id names (the bucket that reserved them).
func readPending(ctx context.Context, db *sql.DB, st *stock.Store, itemID int64, n *numbers) error {
	if n.redis.Pending == 0 {
		return nil
	}
	qty := map[string]int{}
	if err := st.ScanReservations(ctx, itemID, func(r stock.Reservation) error {
		qty[r.RequestID] = r.Qty
		return nil
	}); err != nil {
		return err
	}
	ids := make([]string, 0, len(qty))
	for id := range qty {
		ids = append(ids, id)
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 1000)]
		ids = ids[len(chunk):]
		decided, err := store.DecidedAmong(ctx, db, chunk)
		if err != nil {
			return err
		}
		for id, o := range decided {
			if o == store.Ordered {
				n.orderedPending += int64(qty[id])
				if n.buckets.orderedPending == nil {
					n.buckets.orderedPending = map[int]int64{}
				}
				n.buckets.orderedPending[reqid.Bucket(id)] += int64(qty[id])
			}
		}
	}
	return nil
}

func check(n numbers, r Report) []string {
	v := []string{}
	add := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	active := r.Unpaid + r.Paid
	if active > r.Total {
		add("I1 oversell: unpaid+paid %d > total %d", active, r.Total)
	}
	if n.dupBuyers > 0 {
		add("I2 one per buyer: %d users hold more than one order", n.dupBuyers)
	}
	if r.DBStock+active != r.Total {
		add("I3 mysql conservation: stock %d + active %d != total %d", r.DBStock, active, r.Total)
	}
	// A transfer between buckets takes its units out of the donor before it
	// gives them to the recipient, so while one is open or ran during the
	// audit the item's Redis sum may be short by what is in flight: that
	// check waits, as the per-bucket one does (checkBuckets says why).
	transferring := n.item.Bucketed() && (n.buckets.openTransfers > 0 || !n.buckets.quiet)
	if !n.redis.Warmed {
		add("I3 redis conservation: item not warmed in redis (warm it)")
	} else if transferring {
		// Not checked now; the report's info names the transfer.
	} else if !n.changesQuiet {
		// Not checked now; the report's info says a stock change ran.
	} else if held := n.waitlist.Held() + n.waitlist.Moving(); r.RedisStock+held+r.PendingQty-n.orderedPending+active+n.unappliedRestore+n.changes.total() != r.Total {
		// held counts the units moving between two buckets' shares of the
		// waitlist too: 0 here, where no transfer is open.
		got := r.RedisStock + held + r.PendingQty - n.orderedPending + active + n.unappliedRestore + n.changes.total()
		add("I3 redis conservation: stock %d + held for the waitlist %d + pending %d - pending already ordered %d + active %d + restores not yet in redis %d + stock changes not yet in redis %d = %d != total %d",
			r.RedisStock, held, r.PendingQty, n.orderedPending, active, n.unappliedRestore, n.changes.total(), got, r.Total)
	}
	if w := n.waitlist; !w.Balanced() {
		add("I9 waitlist hand-off: in %d != pool %d + on offer %d + claimed %d + returned %d + moving between buckets %d (a unit in two places, or lost)",
			w.In, w.Pool, w.Offers, w.Claimed, w.Returned, w.Moving())
	} else if w.Moving() != 0 && !transferring {
		// Each bucket's share balances on its own (checkBuckets); at rest
		// what left one share by a transfer must have reached another.
		add("I9 waitlist hand-off: %d units moved out of a bucket's share of the waitlist and %d into another's, with no transfer open (a unit lost, or in two places)",
			w.MovedOut, w.MovedIn)
	}
	if n.orderedNoOrder > 0 || n.orderNoOutcome > 0 {
		add("I4 nothing lost: %d ORDERED requests without an order, %d orders without an ORDERED outcome", n.orderedNoOrder, n.orderNoOutcome)
	}
	if n.cancelNoRestore > 0 || n.restoreNoCancel > 0 {
		add("I5 exactly-once restore: %d cancelled orders without a restore record, %d restore records of orders not cancelled", n.cancelNoRestore, n.restoreNoCancel)
	}
	if n.paidAndCancelled > 0 {
		add("I6 pay/cancel exclusive: %d orders both paid and cancelled", n.paidAndCancelled)
	}
	if r.RedisStock < 0 || r.DBStock < 0 {
		add("I7 negative stock: redis %d, mysql %d", r.RedisStock, r.DBStock)
	}
	return v
}
