package audit

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/bucketview"
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
	unappliedRestore int64 // units restored in MySQL, not in Redis at the cut
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
// It reads a consistent cut (cut.go): the restores MySQL has not marked,
// then Redis bucket by bucket (each in one step), then MySQL in one
// snapshot, fenced by the stock changes' and the transfers' marks read
// before and after.
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
	marks := bucketview.NewStore(st)
	var markBefore bucketview.TransferMark
	if n.item.Bucketed() {
		if markBefore, err = marks.ReadTransferMark(ctx, itemID); err != nil {
			return Report{}, err
		}
	}
	unmarked, err := store.UnappliedRestoresOf(ctx, db, itemID)
	if err != nil {
		return Report{}, err
	}
	c, err := readCut(ctx, st, n.item, unmarked)
	if err != nil {
		return Report{}, err
	}
	testHookAfterCut(ctx, itemID)
	n.redis, n.waitlist = c.state, c.waitlist
	if err := readSnapshot(ctx, db, c, &n, &rep); err != nil {
		return Report{}, err
	}
	if n.item.Bucketed() {
		markAfter, err := marks.ReadTransferMark(ctx, itemID)
		if err != nil {
			return Report{}, err
		}
		n.buckets.quiet = markBefore.Quiet(markAfter)
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
	if c.paged > 0 {
		rep.Info = append(rep.Info, fmt.Sprintf("%d buckets held more than %d pending reservations, read in pages after the cut: a redis conservation report may be a unit in flight", c.paged, maxCutReservations))
	}
	rep.OK = len(rep.Violations) == 0
	return rep, nil
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
