package reap

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// reservedItems returns the ids of every item that has a reservations hash
// in Redis, whether or not MySQL knows the item: the orphan sweep uses it to
// find reservations of items it would otherwise never visit. It reads the
// registry of warmed items (stock.WarmedItems; an item gets reservations
// only once warmed) and asks each item's shard, in one pipeline, whether
// its reservations hash exists: a cost in items, not in keys. It only
// reads the ledger's keys (pkg/stock names them), on its client.
func reservedItems(ctx context.Context, st *stock.Store) ([]int64, error) {
	rdb := st.Client()
	var ids []int64
	var cursor uint64
	for {
		members, next, err := rdb.SScan(ctx, stock.WarmedItems(), cursor, "", 1000).Result()
		if err != nil {
			return nil, unavailable("reap: read warmed items", err)
		}
		for _, m := range members {
			if id, err := strconv.ParseInt(m, 10, 64); err == nil {
				ids = append(ids, id)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	// Bucket 0's reservations and bucket count first; then the other
	// buckets of the bucketed items among them.
	exists := make([]*redis.IntCmd, len(ids))
	counts := make([]*redis.StringCmd, len(ids))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			exists[i] = p.Exists(ctx, stock.KeysOf(id).Reservations)
			counts[i] = p.HGet(ctx, stock.KeysOf(id).Meta, "buckets")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("reap: find reserved items", err)
	}
	reserved := map[int64]bool{}
	var more []*redis.IntCmd
	var moreIDs []int64
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			reserved[id] = exists[i].Val() > 0
			for b := 1; b < stock.ParseBuckets(counts[i].Val()); b++ {
				more = append(more, p.Exists(ctx, stock.BucketKeys(id, b).Reservations))
				moreIDs = append(moreIDs, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("reap: find reserved items", err)
	}
	for i, c := range more {
		reserved[moreIDs[i]] = reserved[moreIDs[i]] || c.Val() > 0
	}
	var out []int64
	for _, id := range ids {
		if reserved[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// unavailable wraps a failure to reach Redis in stock.ErrUnavailable, which
// the sweep stops on (Redis is down: the other items would only time out).
var unavailable = stock.Unavailable
