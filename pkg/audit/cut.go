package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// The consistent cut (issue 43 item 3). An audit read MySQL and Redis at
// different moments, so mid-sale it could catch a unit between the stores
// and report a drift that no longer held a moment later, and under a
// stalled Redis such a drift could hold for seconds. The audit now reads:
//
//  1. the restores MySQL has not marked applied (their request ids);
//  2. Redis, each bucket in one MULTI/EXEC of its slot (cutBucket): its
//     stock and counts, every pending reservation, its share of the
//     waitlist, and the restore guards of the restores of step 1;
//  3. MySQL, in one REPEATABLE READ snapshot (snapshot.go): the item's
//     row, its orders, the outcomes of the reservations step 2 saw, the
//     restores not yet marked.
//
// Why in that order: every unit moves between the stores along a path that
// writes Redis first or MySQL first, and the cut must count it once wherever
// it is. An order is reserved in Redis, then committed in MySQL, then
// settled in Redis: with Redis read before MySQL, a reservation the cut saw
// is either still pending, or ordered in the snapshot and then subtracted as
// "pending already ordered" (its settle later than the cut changes nothing).
// A restore is recorded in MySQL (the order cancelled), then applied in
// Redis with its guard set in the same script, then marked in MySQL: the cut
// says, by the guard, whether the qty was in Redis at the cut's instant,
// however long the mark is held up (a stalled Redis kept that state for
// seconds and the audit counted the unit twice). A warm sets the guards of
// the restores it counted, so a guard means "in Redis" there too.
//
// What it still cannot see, briefly, is a restore both applied and marked
// between the cut and the snapshot (a few milliseconds; a re-read clears
// it: pkg/auditor's confirm), a bucket with more pending reservations than
// maxCutReservations (read in pages after its cut; Info says so), and a
// unit moving between two buckets (a transfer, which the transfer marks
// fence) or a stock change (which the change guards fence).

// maxCutReservations bounds the reservations one bucket's cut reads in its
// transaction: an HSCAN of 10,000 entries holds Redis for a few
// milliseconds, as long as the audit may on a live sale.
// (A variable only so a test can make a small bucket too big to cut.)
var maxCutReservations = 10_000

// testHookAfterCut runs between an item's cut and its snapshot: a test writes
// there what a consumer or reaper could commit in that gap.
var testHookAfterCut = func(context.Context, int64) {}

// cut is the Redis side of an item as the audit read it.
type cut struct {
	state    stock.State       // the buckets' States, summed (stock.SumBuckets)
	waitlist waitroom.Waitlist // zero for an item without a queue
	// reservations are every bucket's pending reservations (for the
	// outcomes the snapshot reads), paged says how many buckets were read
	// in pages after their cut instead of in it.
	reservations []stock.Reservation
	paged        int
	// restored[request id] is whether a restore MySQL had not marked
	// applied before the cut was in Redis at the cut (its guard set).
	restored map[string]bool
}

// readCut reads the item's Redis side, one transaction per bucket: as many
// buckets as Redis' bucket 0 names (the item's State, as ReadState reads
// it) and as many as MySQL's row names (the waitlist's shares), whichever
// is more. unmarked are the restores MySQL had not marked applied.
func readCut(ctx context.Context, st *stock.Store, it store.Item, unmarked []store.Order) (cut, error) {
	mysqlBuckets := max(it.Buckets, 1)
	guards := map[int][]string{}
	for _, o := range unmarked {
		if o.Bucket >= 0 && o.Bucket < mysqlBuckets && len(guards[o.Bucket]) < maxCutReservations {
			guards[o.Bucket] = append(guards[o.Bucket], o.RequestID)
		}
	}
	c := cut{restored: map[string]bool{}}
	var states []stock.State
	var shares []waitroom.Waitlist
	var line int64
	redisBuckets := 1 // known once bucket 0 is read
	for b := 0; b < max(mysqlBuckets, redisBuckets); b++ {
		bc, share, l, err := cutBucket(ctx, st, it, b, guards[b])
		if err != nil {
			return cut{}, err
		}
		if b == 0 {
			// Redis' own count decides how many buckets make the item's
			// State (a relayout not yet warmed shows as a mismatch).
			redisBuckets, line = max(bc.State.Buckets, 1), l
		}
		if b < redisBuckets {
			if !bc.Whole {
				c.paged++
				if err := readPaged(ctx, st, it.ID, b, &bc); err != nil {
					return cut{}, err
				}
			}
			states = append(states, bc.State)
			c.reservations = append(c.reservations, bc.Reservations...)
		}
		if b < mysqlBuckets {
			shares = append(shares, share)
		}
		for id, set := range bc.Guards {
			c.restored[id] = set
		}
	}
	c.state = stock.SumBuckets(states)
	if it.Queue {
		c.waitlist = waitroom.SumShares(shares, line)
	}
	return c, nil
}

// cutBucket reads one bucket in one MULTI/EXEC: its Cut and, for an item
// with a queue, its share of the waitlist (with bucket 0's line).
func cutBucket(ctx context.Context, st *stock.Store, it store.Item, b int, restoreIDs []string) (stock.Cut, waitroom.Waitlist, int64, error) {
	tx := st.Client().TxPipeline()
	readCut := stock.QueueCut(ctx, tx, it.ID, b, restoreIDs, maxCutReservations)
	var readShare func() (waitroom.Waitlist, int64, error)
	if it.Queue {
		readShare = waitroom.QueueShare(ctx, tx, it.ID, b)
	}
	// A missing key (an unwarmed bucket's stock) is a nil reply of its
	// command, not a failed transaction.
	if _, err := tx.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return stock.Cut{}, waitroom.Waitlist{}, 0, stock.Unavailable(fmt.Sprintf("audit: cut of item %d bucket %d", it.ID, b), err)
	}
	bc, err := readCut()
	if err != nil {
		return stock.Cut{}, waitroom.Waitlist{}, 0, err
	}
	if readShare == nil {
		return bc, waitroom.Waitlist{}, 0, nil
	}
	share, line, err := readShare()
	return bc, share, line, err
}

// readPaged fills a bucket's reservations the cut could not read whole,
// in HSCAN pages after it: what they add is no longer of the cut's
// instant, so the report's Info says the redis check may straddle.
func readPaged(ctx context.Context, st *stock.Store, itemID int64, b int, bc *stock.Cut) error {
	bc.State.PendingQty, bc.State.OldestReservedAt = 0, time.Time{}
	return st.ScanReservations(ctx, itemID, func(r stock.Reservation) error {
		if reqid.Bucket(r.RequestID) != b {
			return nil
		}
		bc.Reservations = append(bc.Reservations, r)
		bc.State.PendingQty += int64(r.Qty)
		if bc.State.OldestReservedAt.IsZero() || r.ReservedAt.Before(bc.State.OldestReservedAt) {
			bc.State.OldestReservedAt = r.ReservedAt
		}
		return nil
	})
}
