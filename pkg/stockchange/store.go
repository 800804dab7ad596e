package stockchange

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// Store is a stock change's part in Redis: in each bucket of the item, the
// change of its stock once per operation id, and the guard that keeps what
// it changed (stock.Keys.StockChangeGuard, lua/stock_change.lua). The
// Changer orders the steps; the audit reads the guards of the changes
// MySQL still has PENDING. Its keys are named by pkg/stock's key helpers,
// with every other key of a bucket and its hash tag; the stock key its
// script changes is the ledger's.
type Store struct {
	// st is the ledger, whose Redis client (st.Client()) is asked for at
	// each call: a Store made over a nil stock.Store (a server built
	// without stores, to list its routes) fails only if it is used. Redis
	// failures are wrapped by stock.Unavailable, the one error every caller
	// answers 503 for.
	st *stock.Store
}

// NewStore returns the stock changes' store over the ledger's client.
func NewStore(st *stock.Store) *Store { return &Store{st: st} }

// ChangeBucketStock changes bucket's Redis stock of item by delta (signed)
// once for operationID: a restock gives delta, a withdraw takes what the
// bucket holds, at most -delta. It returns the units changed (signed; the
// same on every call) and whether this call changed them.
func (s *Store) ChangeBucketStock(ctx context.Context, itemID int64, bucket int, operationID string, delta int64) (int64, bool, error) {
	k := stock.BucketKeys(itemID, bucket)
	v, err := stockChangeScript.Run(ctx, s.st.Client(), []string{k.Stock, k.StockChangeGuard(operationID)}, delta).Int64Slice()
	if err != nil {
		return 0, false, stock.Unavailable("stockchange: change stock", err)
	}
	if len(v) != 2 {
		return 0, false, fmt.Errorf("stockchange: change stock: reply %v", v)
	}
	return v[0], v[1] == 1, nil
}

// Guards reads operationID's guard in each of the item's first n buckets:
// the units Redis changed there (signed), and whether the bucket ran its
// part at all. The audit reads them for the changes MySQL still has
// PENDING.
func (s *Store) Guards(ctx context.Context, itemID int64, n int, operationID string) ([]int64, []bool, error) {
	pipe := s.st.Client().Pipeline()
	cmds := make([]*redis.StringCmd, n)
	for b := range n {
		cmds[b] = pipe.Get(ctx, stock.BucketKeys(itemID, b).StockChangeGuard(operationID))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, stock.Unavailable("stockchange: read change guards", err)
	}
	units, ran := make([]int64, n), make([]bool, n)
	for b, c := range cmds {
		v, err := c.Int64()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("stockchange: change guard of %q: %w", operationID, err)
		}
		units[b], ran[b] = v, true
	}
	return units, ran, nil
}

// ExpireGuards gives operationID's guards stock.MarkedGuardTTL, once MySQL
// marked the change APPLIED (as restore guards get theirs).
func (s *Store) ExpireGuards(ctx context.Context, itemID int64, n int, operationID string) error {
	pipe := s.st.Client().Pipeline()
	for b := range n {
		pipe.Expire(ctx, stock.BucketKeys(itemID, b).StockChangeGuard(operationID), stock.MarkedGuardTTL)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return stock.Unavailable("stockchange: expire change guards", err)
	}
	return nil
}
