package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// A bucketed item (items.buckets > 1) keeps its stock in one MySQL row and
// one Redis bucket per bucket, and each bucket must conserve on its own: the
// item-level sums cannot see a unit that is in the wrong bucket in one store
// only, yet that unit is sold twice or never. The per-bucket checks are:
//
//   - MySQL, always: item_buckets.stock + the live qty (UNPAID, PAID) of the
//     orders attributed to the bucket (orders.bucket MOD items.buckets) =
//     item_buckets.total_stock; the buckets' totals add up to
//     items.total_stock; items.stock is 0; one row per bucket. A transfer
//     moves a row pair's stock and total in one transaction, so these hold
//     at every commit, transfers or not, and the rows, orders and restores
//     are read in one REPEATABLE READ snapshot.
//   - Redis, like the item's I3 redis check per bucket: stock + what the
//     bucket's share of the waitlist holds (pool, live offers) + pending
//     qty - the pending already decided ORDERED + live qty + restores not
//     yet applied in Redis = the bucket's MySQL total. A reservation counts in
//     the bucket its request id names (reqid.Bucket), a restore in
//     stock_restores.bucket. Only while no transfer of the item is open
//     (store.OpenTransfersOf) and none ran during the audit (the Redis
//     bucketview.TransferMark read before and after): a transfer under way
//     has moved its units in one store and not yet in the other. The report
//     then says so in Info, not as a violation.
//   - I7 per bucket: no bucket negative in either store.
//   - I9 per bucket, for an item with a waiting room: the bucket's share of
//     the waitlist balances (in + moved in = pool + offers + claimed +
//     returned + moved out), always, since each share is read in one
//     step; the item's sum must also show nothing moving between two
//     shares while no transfer is open (audit.go).

// BucketReport is one bucket's numbers, as Report's are the item's:
// api.AuditBucket, an entry of Report.PerBucket.
type BucketReport = api.AuditBucket

// bucketNumbers is what the per-bucket checks need beyond numbers.
type bucketNumbers struct {
	itemStock, itemTotal int64 // items.stock and items.total_stock themselves
	rows                 []store.StockRow
	// orders[b] is the qty of bucket b's orders by status.
	orders         map[int]map[store.OrderStatus]int64
	unapplied      map[int]int64 // restores not yet in Redis, by bucket
	orderedPending map[int]int64 // pending reservations decided ORDERED, by bucket
	openTransfers  int64
	// quiet: no transfer was live or finished while the audit read.
	quiet bool
}

// readBuckets reads the MySQL side of a bucketed item with buckets buckets
// in the audit's snapshot q (readSnapshot): the item's own stock and
// total, every bucket's row, the orders by bucket, the open transfers. A
// consumer or reaper commit between two reads cannot look like a unit in
// the wrong place.
func readBuckets(ctx context.Context, q store.Querier, itemID int64, buckets int, bn *bucketNumbers) error {
	if err := q.QueryRowContext(ctx, "SELECT stock, total_stock FROM items WHERE id = ?", itemID).Scan(&bn.itemStock, &bn.itemTotal); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("audit: buckets of %d: %w", itemID, store.ErrNotFound)
		}
		return fmt.Errorf("audit: buckets of %d: %w", itemID, err)
	}
	var err error
	if bn.rows, err = store.BucketRows(ctx, q, itemID, false); err != nil {
		return err
	}
	bn.orders = map[int]map[store.OrderStatus]int64{}
	err = scanGroups(ctx, q, "SELECT bucket MOD ?, status, COALESCE(SUM(qty), 0) FROM orders WHERE item_id = ? GROUP BY bucket MOD ?, status",
		[]any{buckets, itemID, buckets}, func(b int, status string, qty int64) {
			if bn.orders[b] == nil {
				bn.orders[b] = map[store.OrderStatus]int64{}
			}
			bn.orders[b][store.OrderStatus(status)] = qty
		})
	if err != nil {
		return fmt.Errorf("audit: orders by bucket of %d: %w", itemID, err)
	}
	bn.openTransfers, err = store.OpenTransfersOf(ctx, q, itemID)
	return err
}

// scanGroups runs a (bucket, label, qty) grouping query.
func scanGroups(ctx context.Context, q store.Querier, query string, args []any, fn func(int, string, int64)) error {
	return sqlrows.Each(ctx, q, query, args, func(r sqlrows.Row) error {
		var b int
		var label string
		var qty int64
		if err := r.Scan(&b, &label, &qty); err != nil {
			return err
		}
		fn(b, label, qty)
		return nil
	})
}

// bucketReports lays the numbers out per bucket, 0 to items.buckets-1 (a
// bucket without its MySQL row shows 0 there; checkBuckets names it).
func bucketReports(n numbers) []BucketReport {
	out := make([]BucketReport, n.item.Buckets)
	for b := range out {
		r := BucketReport{Bucket: b}
		if i := slices.IndexFunc(n.buckets.rows, func(row store.StockRow) bool { return row.Bucket == b }); i >= 0 {
			r.Total, r.DBStock = n.buckets.rows[i].TotalStock, n.buckets.rows[i].Stock
		}
		if b < len(n.redis.PerBucket) {
			rs := n.redis.PerBucket[b]
			r.RedisStock, r.Pending, r.PendingQty = rs.Stock, rs.Pending, rs.PendingQty
		}
		o := n.buckets.orders[b]
		r.Unpaid, r.Paid, r.Cancelled = o[store.Unpaid], o[store.Paid], o[store.Cancelled]
		if b < len(n.waitlist.PerBucket) {
			w := n.waitlist.PerBucket[b]
			r.WaitlistHeld = w.Pool + w.Offers
		}
		out[b] = r
	}
	return out
}

// checkBuckets returns the per-bucket violations of a bucketed item, and
// the notes of checks it could not make.
func checkBuckets(n numbers, per []BucketReport) (violations, info []string) {
	v := []string{}
	add := func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) }
	bn := n.buckets
	have := make([]int, 0, len(bn.rows))
	var totals int64
	for _, row := range bn.rows {
		have = append(have, row.Bucket)
		totals += row.TotalStock
	}
	if len(have) != len(per) || (len(have) > 0 && have[len(have)-1] != len(per)-1) {
		add("I3 mysql buckets: item_buckets rows of buckets %v, want one per bucket 0 to %d", have, len(per)-1)
	}
	if bn.itemStock != 0 {
		add("I3 mysql buckets: items.stock %d of a bucketed item, want 0 (its stock is in item_buckets)", bn.itemStock)
	}
	if totals != bn.itemTotal {
		add("I3 mysql buckets: bucket totals add up to %d != item total %d", totals, bn.itemTotal)
	}
	for _, r := range per {
		if active := r.Unpaid + r.Paid; r.DBStock+active != r.Total {
			add("I3 mysql conservation in bucket %d: stock %d + active %d != total %d", r.Bucket, r.DBStock, active, r.Total)
		}
	}
	switch {
	case !n.redis.Warmed:
		// The item-level check already says so.
	case n.redis.Buckets != len(per):
		add("I3 redis conservation: redis has %d buckets, mysql %d (warm the item)", n.redis.Buckets, len(per))
	case bn.openTransfers > 0:
		info = append(info, fmt.Sprintf("transfers open: %d between buckets not finished; the per-bucket redis check waits for them", bn.openTransfers))
	case !bn.quiet:
		info = append(info, "transfers ran during the audit; the per-bucket redis check is skipped")
	case !n.changesQuiet:
		// Item's Info says a stock change ran.
	default:
		for _, r := range per {
			op, un, ch := bn.orderedPending[r.Bucket], bn.unapplied[r.Bucket], n.changes.lag[r.Bucket]
			if got := r.RedisStock + r.WaitlistHeld + r.PendingQty - op + r.Unpaid + r.Paid + un + ch; got != r.Total {
				add("I3 redis conservation in bucket %d: stock %d + held for the waitlist %d + pending %d - pending already ordered %d + active %d + restores not yet in redis %d + stock changes not yet in redis %d = %d != total %d",
					r.Bucket, r.RedisStock, r.WaitlistHeld, r.PendingQty, op, r.Unpaid+r.Paid, un, ch, got, r.Total)
			}
		}
	}
	// Each bucket's share of the waitlist is read in one step, so it
	// balances whatever runs meanwhile, transfers included (I9).
	for b, w := range n.waitlist.PerBucket {
		if !w.Balanced() {
			add("I9 waitlist hand-off in bucket %d: in %d + moved in %d != pool %d + on offer %d + claimed %d + returned %d + moved out %d (a unit in two places, or lost)",
				b, w.In, w.MovedIn, w.Pool, w.Offers, w.Claimed, w.Returned, w.MovedOut)
		}
	}
	for _, r := range per {
		if r.RedisStock < 0 || r.DBStock < 0 {
			add("I7 negative stock in bucket %d: redis %d, mysql %d", r.Bucket, r.RedisStock, r.DBStock)
		}
	}
	return v, info
}
