package admission

import "github.com/flashsale-dev/flashsale/pkg/bucketview"

// The bucket promise: what a buyer of qty units (1 to the item's per-user
// limit) of an item of n > 1 stock buckets is answered, whatever the
// rebalancer (pkg/rebalance) is doing. admission_prop_test.go checks it
// clause by clause against real Redis, and pkg/rebalance's model test
// checks it with the rebalancer moving stock and its mover crashing.
//
//  1. 202 only with qty units taken from the buyer's home bucket (one
//     bucket: an order is never split).
//  2. 410 sold_out from Redis only when one read of every bucket, with no
//     transfer between buckets under way and none finished while it read
//     (bucketview.Snapshot.Consistent), found the buckets together holding
//     fewer than qty units. That read is at most BucketPoll older than the
//     answer (bucketViews shares it), and units only leave an item by
//     being sold (a transfer moves them, counted in flight), so: while
//     nothing is given back, a buyer of qty is answered 410 only when the
//     buckets together hold fewer than qty, and a buyer of 1 never while
//     any bucket holds a unit.
//  3. 410 from memory (SoldOutMem) only within SoldOutTTL of such a read
//     that found the buckets together empty: never because another buyer
//     asked for more than was left.
//  4. Otherwise, when the home bucket does not get qty within BucketWait,
//     503 stock_moving with Retry-After and nothing reserved; the refusal
//     raised the bucket's want flag to qty, and the wait keeps it up
//     (wake.go), so the rebalancer gathers it.
//
// What it does not promise: that a buyer is served within BucketWait (that
// is the rebalancer's speed, measured, not proven), nor anything about
// units given back after the read (a cancelled order's release can make a
// 410 from memory stale for up to SoldOutTTL, as on an unbucketed item).

// look is awaitStock's reading of one snapshot of the buckets.
type look int

const (
	lookWait    look = iota // the buckets may cover qty: wait for the rebalancer
	lookSoldOut             // clause 2: the buckets together hold fewer than qty
	lookTryHome             // the home bucket shows qty: run the script again
)

// judge reads snap for a buyer of qty homed on bucket home. It is the only
// place a bucketed item's 410 is decided (clause 2).
func judge(snap bucketview.Snapshot, home, qty int) look {
	switch {
	case snap.SoldOut(qty):
		return lookSoldOut
	case home < len(snap.Stocks) && snap.Stocks[home] >= int64(qty):
		return lookTryHome
	}
	return lookWait
}
