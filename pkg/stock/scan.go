package stock

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ReservedItems returns the ids of every item that has a reservations hash
// in Redis, whether or not MySQL knows the item: the reaper uses it to find
// reservations of items it would otherwise never visit. It walks the whole
// keyspace with SCAN (never KEYS, so Redis is not blocked), on every master
// of a Cluster, so callers should run it seldom.
func (s *Store) ReservedItems(ctx context.Context) ([]int64, error) {
	const prefix, suffix = "fs:{item:", "}:resv"
	var mu sync.Mutex
	seen := map[int64]bool{}
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.ScanType(ctx, cursor, prefix+"*"+suffix, 1000, "hash").Result()
			if err != nil {
				return unavailable("stock: scan reservations keys", err)
			}
			mu.Lock()
			for _, k := range keys {
				id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(k, prefix), suffix), 10, 64)
				if err == nil {
					seen[id] = true
				}
			}
			mu.Unlock()
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	var err error
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, s.rdb)
	}
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	return out, nil
}
