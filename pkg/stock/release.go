package stock

import (
	"context"
)

// The end of a reservation in Redis: released (its qty and buyer mark
// back, as its outcome says) or settled (kept: the order was written).

// ReleaseOptions says what a release gives back.
type ReleaseOptions struct {
	// ReturnStock gives the qty back to the Redis stock (ABORTED, VOIDED,
	// duplicate_buyer). Not for sold_out: MySQL had no stock to match it.
	ReturnStock bool
	// RemoveBuyer clears the buyer mark so the buyer may try again.
	RemoveBuyer bool
	// Holder, when set, makes the buyer mark name this request id: a
	// duplicate_buyer's mark must name the order the buyer really holds.
	Holder string
	// UserID and IdempotencyKey, when set, drop the Idempotency-Key answer too.
	UserID         int64
	IdempotencyKey string
}

// Release undoes one reservation at most once; it reports whether this call
// did it (false: already released or settled).
func (s *Store) Release(ctx context.Context, itemID int64, requestID string, o ReleaseOptions) (bool, error) {
	keys, args := releaseCall(itemID, requestID, o)
	n, err := releaseScript.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return false, unavailable("stock: release", err)
	}
	return n == 1, nil
}

// releaseCall builds release.lua's keys and arguments; see its header.
func releaseCall(itemID int64, requestID string, o ReleaseOptions) ([]string, []any) {
	k := RequestKeys(itemID, requestID)
	extra, dropIdem := k.Stock, "0" // a key of the same slot, never touched when unused
	if o.IdempotencyKey != "" {
		extra, dropIdem = k.Idempotency(o.UserID, o.IdempotencyKey), "1"
	}
	// The waitlist's keys are the bucket's own (Keys.Waitlist): a unit
	// released in a bucket waits in that bucket's pool, and a claim was
	// made in its buyer's home bucket, where its offer lived.
	return []string{k.Stock, k.Holders, k.Reservations, extra, k.Meta, k.Waitlist, k.Offers, k.Claims},
		[]any{requestID, flag(o.ReturnStock), flag(o.RemoveBuyer), dropIdem, o.Holder}
}

// Settle drops the reservations of requests that became orders: one call
// per bucket the requests were admitted in (each bucket is its own slot).
func (s *Store) Settle(ctx context.Context, itemID int64, requestIDs []string) error {
	byBucket := map[int][]any{}
	for _, id := range requestIDs {
		b := RequestKeys(itemID, id).Bucket
		byBucket[b] = append(byBucket[b], id)
	}
	for b, args := range byBucket {
		if err := settleScript.Run(ctx, s.rdb, []string{BucketKeys(itemID, b).Reservations}, args...).Err(); err != nil {
			return unavailable("stock: settle", err)
		}
	}
	return nil
}
