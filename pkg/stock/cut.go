package stock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A bucket's admission ledger read in one step, for an audit that must not
// straddle a write (pkg/audit's consistent cut).

// Cut is one bucket's Redis side as of one instant: its State, every
// pending reservation, and whether each restore guard asked about was set.
// It is read in one MULTI/EXEC on the bucket's slot (every key of a bucket
// carries its hash tag), so no admission, settle, release or restore of
// the bucket falls between two of its reads.
type Cut struct {
	State State
	// Reservations are the bucket's pending reservations, all of them when
	// Whole. A bucket with more than the cut's cap of them is not read
	// whole in one step (one HSCAN of that many entries would hold Redis
	// for too long): Whole is false and Reservations empty, and the caller
	// reads them in pages (ScanReservations), no longer in the cut.
	Reservations []Reservation
	Whole        bool
	// Guards says, for each request id asked about, whether its restore
	// guard was set: its cancelled order's qty was given back to this
	// bucket in Redis (restore.lua), or counted by a warm from MySQL.
	Guards map[string]bool
}

// QueueCut queues on p, a transaction pipeline (TxPipeline) of bucket's
// slot alone, the reads of bucket's Cut: its counts, up to maxReservations
// of its reservations, and the restore guards of restoreIDs (request ids
// whose restores went to this bucket). The returned function parses them
// once p ran. Other features queue their own reads of the same bucket on
// the same p (pkg/waitroom's QueueShare), so they fall in the same cut.
func QueueCut(ctx context.Context, p redis.Pipeliner, itemID int64, bucket int, restoreIDs []string, maxReservations int) func() (Cut, error) {
	k := BucketKeys(itemID, bucket)
	state := queueState(ctx, p, k)
	// One HSCAN from cursor 0 with COUNT n returns every entry of a hash
	// of at most n entries (Redis keeps scanning until it has n or the
	// cursor wraps), so a zero cursor back means the page is the hash.
	scan := p.HScan(ctx, k.Reservations, 0, "*", int64(maxReservations))
	guards := make([]*redis.IntCmd, len(restoreIDs))
	for i, id := range restoreIDs {
		guards[i] = p.Exists(ctx, k.RestoreGuard(id))
	}
	return func() (Cut, error) {
		c := Cut{State: state.parse(), Guards: make(map[string]bool, len(restoreIDs))}
		kv, cursor, err := scan.Result()
		if err != nil {
			return Cut{}, unavailable("stock: cut reservations", err)
		}
		seen := make(map[string]struct{}, len(kv)/2)
		for i := 0; cursor == 0 && i+1 < len(kv); i += 2 {
			if _, dup := seen[kv[i]]; dup {
				continue // a scan may return an entry twice
			}
			seen[kv[i]] = struct{}{}
			r, err := ParseReservation(kv[i], kv[i+1])
			if err != nil {
				return Cut{}, fmt.Errorf("stock: cut of item %d bucket %d: %w", itemID, bucket, err)
			}
			c.Reservations = append(c.Reservations, r)
		}
		// HLEN was read in the same transaction: whole means every entry.
		// (A small hash answers whole whatever COUNT says; more than the
		// cap is paged all the same, one rule for every encoding.)
		if c.Whole = cursor == 0 && int64(len(c.Reservations)) == c.State.Pending && c.State.Pending <= int64(maxReservations); c.Whole {
			for _, r := range c.Reservations {
				c.State.add(r)
			}
		} else {
			c.Reservations = nil
		}
		for i, g := range guards {
			n, err := g.Result()
			if err != nil {
				return Cut{}, unavailable("stock: cut restore guards", err)
			}
			c.Guards[restoreIDs[i]] = n == 1
		}
		return c, nil
	}
}
