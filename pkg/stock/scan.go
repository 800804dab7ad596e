package stock

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ReservedItems returns the ids of every item that has a reservations hash
// in Redis, whether or not MySQL knows the item: the reaper uses it to find
// reservations of items it would otherwise never visit. It reads the
// registry of warmed items (WarmedItems; an item gets reservations only
// once warmed) and asks each item's shard, in one pipeline, whether its
// reservations hash exists: a cost in items, not in keys.
func (s *Store) ReservedItems(ctx context.Context) ([]int64, error) {
	var ids []int64
	var cursor uint64
	for {
		members, next, err := s.rdb.SScan(ctx, WarmedItems, cursor, "", 1000).Result()
		if err != nil {
			return nil, unavailable("stock: read warmed items", err)
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
	exists := make([]*redis.IntCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			exists[i] = p.Exists(ctx, KeysOf(id).Reservations)
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("stock: find reserved items", err)
	}
	var out []int64
	for i, id := range ids {
		if exists[i].Val() > 0 {
			out = append(out, id)
		}
	}
	return out, nil
}
