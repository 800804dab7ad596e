package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// A bucketed item splits its stock over n buckets, each with its own keys
// (BucketKeys) and so its own Redis Cluster slot. A buyer's home bucket holds
// their buyer mark and is where they are admitted, so admission stays one
// script in one slot and one-order-per-buyer stays exact in Redis; stock
// follows demand between buckets through pkg/rebalance.

// HomeBucket returns the bucket of an item with n buckets that holds
// userID's buyer mark: a stable hash (SplitMix64's finalizer, whose low bits
// spread consecutive ids evenly and are independent of HolderBit's top bits).
func HomeBucket(userID int64, n int) int {
	if n <= 1 {
		return 0
	}
	x := uint64(userID)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x % uint64(n))
}

// Buckets returns the bucket count of item as its Redis state says (bucket
// 0's meta), 1 for an item warmed before buckets existed, and warmed false
// when Redis does not know the item.
func (s *Store) Buckets(ctx context.Context, itemID int64) (n int, warmed bool, err error) {
	k := KeysOf(itemID)
	v, err := s.rdb.HMGet(ctx, k.Meta, "start_ms", "buckets").Result()
	if err != nil {
		return 0, false, unavailable("stock: buckets", err)
	}
	if len(v) != 2 || v[0] == nil {
		return 0, false, nil
	}
	return ParseBuckets(v[1]), true, nil
}

// ParseBuckets is the bucket count that bucket 0's meta field "buckets"
// holds, as HMGET answers it: 1 when it is missing or not a count (an item
// warmed before buckets existed). Buckets reads it so, and so does the
// rebalancer's one-pipeline view of an item (pkg/rebalance).
func ParseBuckets(v any) int {
	s, ok := v.(string)
	if !ok {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// BucketSnapshot is one read of every bucket's Redis stock of an item.
type BucketSnapshot struct {
	// Stocks is each bucket's stock (-1: no stock key).
	Stocks []int64
	// Consistent is true when no unit was moving between buckets while
	// they were read, so units missing from Stocks are really gone.
	Consistent bool
}

// SoldOut reports whether the snapshot proves that the buckets together
// hold fewer than qty units (only a consistent one can). Together, not
// each: 1 unit in each of two buckets is stock for a buyer of 2, which the
// rebalancer gathers into the buyer's bucket.
func (b BucketSnapshot) SoldOut(qty int) bool {
	return b.Consistent && b.Total() < int64(qty)
}

// Total is the units the buckets hold together (a missing key counts 0).
func (b BucketSnapshot) Total() int64 {
	var sum int64
	for _, v := range b.Stocks {
		sum += max(v, 0)
	}
	return sum
}

// BucketSnapshot reads the stock of each of item's n buckets. A transfer
// takes its units out of the donor before it gives them to the recipient,
// so a plain read of the buckets can see them in neither. The rebalancer
// adds the transfer to TransfersLive before its first step and counts it in
// TransfersDone after its last; when both read the same before and after
// the stock reads, with nothing live, no unit was in flight while the
// buckets were read, and the snapshot is Consistent.
func (s *Store) BucketSnapshot(ctx context.Context, itemID int64, n int) (BucketSnapshot, error) {
	k := KeysOf(itemID)
	before, err := s.transferMark(ctx, k)
	if err != nil {
		return BucketSnapshot{}, err
	}
	stocks, err := s.BucketStocks(ctx, itemID, n)
	if err != nil {
		return BucketSnapshot{}, err
	}
	snap := BucketSnapshot{Stocks: stocks}
	if before.Live > 0 {
		return snap, nil
	}
	after, err := s.transferMark(ctx, k)
	if err != nil {
		return BucketSnapshot{}, err
	}
	snap.Consistent = after == before
	return snap, nil
}

func (s *Store) transferMark(ctx context.Context, k Keys) (TransferMark, error) {
	var live *redis.IntCmd
	var done *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		live = p.SCard(ctx, k.TransfersLive())
		done = p.Get(ctx, k.TransfersDone())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return TransferMark{}, unavailable("stock: transfers", err)
	}
	d, _ := done.Int64()
	return TransferMark{Live: live.Val(), Done: d}, nil
}

// BucketStocks returns the Redis stock of each of item's n buckets (-1 for
// a bucket Redis has no stock key of).
func (s *Store) BucketStocks(ctx context.Context, itemID int64, n int) ([]int64, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, n)
	for b := range n {
		cmds[b] = pipe.Get(ctx, BucketKeys(itemID, b).Stock)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable(fmt.Sprintf("stock: stocks of item %d", itemID), err)
	}
	out := make([]int64, n)
	for b, c := range cmds {
		v, err := c.Int64()
		if err != nil {
			v = -1
		}
		out[b] = v
	}
	return out, nil
}
