package stock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// InFlight is how many of item itemID's orders are reserved in Redis and
// not yet decided in MySQL (its pending reservations, over its buckets):
// the orders the pipeline has still to write. One pipelined round trip per
// Cluster node holding a bucket.
func (s *Store) InFlight(ctx context.Context, itemID int64, buckets int) (int64, error) {
	cmds := make([]*redis.IntCmd, max(buckets, 1))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range cmds {
			cmds[b] = p.HLen(ctx, BucketKeys(itemID, b).Reservations)
		}
		return nil
	})
	if err != nil {
		return 0, unavailable("stock: orders in flight", err)
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}
