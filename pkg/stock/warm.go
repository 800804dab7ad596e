package stock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Warming: copying an item's MySQL state into Redis.

// Snapshot is the MySQL state Warm copies into Redis.
type Snapshot struct {
	ItemID int64
	// Stock is MySQL's stock of an unbucketed item. A bucketed item has
	// BucketStock instead, one entry per bucket, and its bucket count is
	// len(BucketStock).
	Stock       int64
	BucketStock []int64
	// PrevBuckets is the bucket count Redis may still hold keys of (the
	// previous warm's): buckets beyond the new count are emptied and their
	// meta says the new count, so an ingress that still uses the old one is
	// told (Moved) instead of admitting from a bucket that no longer exists.
	PrevBuckets  int
	StartsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
	// Buyers are the users holding an order (any status) for the item, with
	// the request id of that order; each goes to their home bucket.
	Buyers []Holder
	// UnappliedRestores are the cancelled orders whose MySQL restore Redis
	// has not seen: the stock already counts them, so their guards are set
	// (with no TTL: their records are unmarked) in the bucket they restore to.
	UnappliedRestores []RestoreRef
	// MetaOnly refreshes the sale window and limit but keeps stock and buyers.
	MetaOnly bool
	// Queue is whether the item has a waiting room: its meta then makes
	// admit.lua refuse an order that brings no checked grant (NeedGrant).
	Queue bool
}

// RestoreRef names one restore's guard: the cancelled order's request and
// the bucket its qty goes back to.
type RestoreRef struct {
	RequestID string
	Bucket    int
}

// Buckets returns the snapshot's bucket count.
func (snap Snapshot) Buckets() int { return max(len(snap.BucketStock), 1) }

// Warm rebuilds the item's Redis state from snap, bucket by bucket (each
// bucket is its own slot, so one script each). It returns ErrPending while
// reservations of the item wait for their outcome (unless Redis lost the
// bucket's stock key, when there is nothing left to protect); the caller
// (pkg/catalog) checks every bucket for pending reservations before it
// starts, so a refusal comes before any bucket was rewritten unless a
// request was admitted in between.
func (s *Store) Warm(ctx context.Context, snap Snapshot) error {
	n := snap.Buckets()
	// Registered before the warm, so the registry holds every item that
	// can have reservations (the reaper's scan of them, pkg/reap).
	if err := s.rdb.SAdd(ctx, WarmedItems(), snap.ItemID).Err(); err != nil {
		return unavailable("stock: register warmed item", err)
	}
	buyers := make([][]Holder, n)
	for _, h := range snap.Buyers {
		b := HomeBucket(h.UserID, n)
		buyers[b] = append(buyers[b], h)
	}
	guards := make([][]string, n)
	for _, r := range snap.UnappliedRestores {
		b := r.Bucket % n
		guards[b] = append(guards[b], r.RequestID)
	}
	for b := range n {
		st := snap.Stock
		if len(snap.BucketStock) > 0 {
			st = snap.BucketStock[b]
		}
		if err := s.warmBucket(ctx, snap, b, n, st, buyers[b], guards[b]); err != nil {
			return err
		}
	}
	for b := n; b < snap.PrevBuckets && !snap.MetaOnly; b++ {
		if err := s.retireBucket(ctx, snap.ItemID, b, n); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) warmBucket(ctx context.Context, snap Snapshot, bucket, n int, stock int64, buyers []Holder, guards []string) error {
	k := BucketKeys(snap.ItemID, bucket)
	keys := []string{k.Stock, k.Meta, k.Holders, k.Reservations, k.HolderBits, k.Waitlist, k.Offers}
	for _, rid := range guards {
		keys = append(keys, k.RestoreGuard(rid))
	}
	args := make([]any, 0, 8+3*len(buyers))
	args = append(args, stock, snap.StartsAt.UnixMilli(), snap.EndsAt.UnixMilli(), snap.PerUserLimit, flag(snap.MetaOnly), n, flag(snap.Queue), len(buyers))
	for _, b := range buyers {
		args = append(args, b.UserID, b.RequestID)
	}
	for _, b := range buyers {
		args = append(args, HolderBit(b.UserID))
	}
	res, err := warmScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		return unavailable("stock: warm", err)
	}
	if len(res) == 2 && res[0] == "pending" {
		return fmt.Errorf("%w: %s reservations of item %d bucket %d", ErrPending, res[1], snap.ItemID, bucket)
	}
	return nil
}

// retireBucket empties a bucket beyond the item's new count n: no stock, no
// buyers, no share of the waitlist (MySQL's new layout counts what its pool
// held), and a meta that says only n, so admit.lua answers Moved.
func (s *Store) retireBucket(ctx context.Context, itemID int64, bucket, n int) error {
	k := BucketKeys(itemID, bucket)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, k.Stock, k.Meta, k.Holders, k.HolderBits, k.Want, k.Waitlist, k.Offers, k.Claims)
		p.HSet(ctx, k.Meta, "buckets", n)
		return nil
	})
	if err != nil {
		return unavailable("stock: retire bucket", err)
	}
	return nil
}
