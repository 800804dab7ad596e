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

// BucketStocks returns the Redis stock of each of item's n buckets (-1 for
// a bucket Redis has no stock key of): one plain read, which a unit moving
// between buckets may be missing from (pkg/bucketview's Snapshot brackets
// it with the transfer marks).
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
