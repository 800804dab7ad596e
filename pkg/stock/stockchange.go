package stock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Stock changes: a restock's or withdraw's part in one bucket of Redis,
// once per operation id (pkg/stockchange orders the steps).

// StockChangeGuard is the key that keeps what operation id changed in this
// bucket (lua/stock_change.lua). Operation ids are the caller's, checked by
// the admin API to be short and of a safe alphabet.
func (k Keys) StockChangeGuard(operationID string) string {
	return k.prefix + "chg:" + operationID
}

// ChangeBucketStock changes bucket's Redis stock of item by delta (signed)
// once for operationID: a restock gives delta, a withdraw takes what the
// bucket holds, at most -delta. It returns the units changed (signed; the
// same on every call) and whether this call changed them.
func (s *Store) ChangeBucketStock(ctx context.Context, itemID int64, bucket int, operationID string, delta int64) (int64, bool, error) {
	k := BucketKeys(itemID, bucket)
	v, err := stockChangeScript.Run(ctx, s.rdb, []string{k.Stock, k.StockChangeGuard(operationID)}, delta).Int64Slice()
	if err != nil {
		return 0, false, unavailable("stock: change stock", err)
	}
	if len(v) != 2 {
		return 0, false, fmt.Errorf("stock: change stock: reply %v", v)
	}
	return v[0], v[1] == 1, nil
}

// StockChangeGuards reads operationID's guard in each of the item's first n
// buckets: the units Redis changed there (signed), and whether the bucket
// ran its part at all. The audit reads them for the changes MySQL still
// has PENDING.
func (s *Store) StockChangeGuards(ctx context.Context, itemID int64, n int, operationID string) ([]int64, []bool, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, n)
	for b := range n {
		cmds[b] = pipe.Get(ctx, BucketKeys(itemID, b).StockChangeGuard(operationID))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, unavailable("stock: read change guards", err)
	}
	units, ran := make([]int64, n), make([]bool, n)
	for b, c := range cmds {
		v, err := c.Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("stock: change guard of %q: %w", operationID, err)
		}
		units[b], ran[b] = v, true
	}
	return units, ran, nil
}

// ExpireStockChangeGuards gives operationID's guards MarkedGuardTTL, once
// MySQL marked the change APPLIED (as restore guards get theirs).
func (s *Store) ExpireStockChangeGuards(ctx context.Context, itemID int64, n int, operationID string) error {
	pipe := s.rdb.Pipeline()
	for b := range n {
		pipe.Expire(ctx, BucketKeys(itemID, b).StockChangeGuard(operationID), MarkedGuardTTL)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return unavailable("stock: expire change guards", err)
	}
	return nil
}
