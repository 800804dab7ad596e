package orderwriter

import (
	"context"
	"database/sql"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// attemptMode is how a write attempt learns what MySQL already holds for
// its requests.
//
// A batch's first attempt assumes it is new (assumeFresh): no read of the
// requests' earlier decisions, nor of buyers who already hold the item.
// Almost every batch is: a request reaches the writers again only when a
// delivery is replayed (a crash, a rebalance), and a buyer who holds the
// item only when Redis lost their mark. Those two reads were two IN lists a
// batch, about 5.5 and 2 µs of MariaDB per request, for batches in which
// they found nothing (BENCHMARKS.md, "The first attempt reads no earlier
// decisions").
//
// It stays exact because MySQL's unique keys see what the reads would have:
// an earlier decision of a request (request_outcomes' primary key), its
// order (orders.request_id) or the buyer's order of the item
// (orders (user_id, item_id)) fails the attempt's INSERT with a duplicate
// key, the transaction rolls back with nothing written, and the batch is
// decided again with both reads (checked), as every batch was before. An
// attempt that commits has met none of them, so it decided what a checked
// attempt would have.
type attemptMode int

const (
	assumeFresh attemptMode = iota
	checked
	// underLock is checked with the stock row locked: the fallback that
	// decides request by request when MySQL's stock is short of the batch.
	underLock
)

// decisionsAmong is store.DecisionsAmong, or none for a first attempt.
func (m attemptMode) decisionsAmong(ctx context.Context, tx *sql.Tx, ids []string) (map[string]store.Decision, error) {
	if m == assumeFresh {
		return map[string]store.Decision{}, nil
	}
	return store.DecisionsAmong(ctx, tx, ids)
}

// existingBuyers is store.ExistingBuyers, or none for a first attempt.
func (m attemptMode) existingBuyers(ctx context.Context, tx *sql.Tx, item int64, users []int64) (map[int64]string, error) {
	if m == assumeFresh {
		return map[int64]string{}, nil
	}
	return store.ExistingBuyers(ctx, tx, item, users)
}

// existingBuyersAmong is store.ExistingBuyersAmong, or none for a first
// attempt.
func (m attemptMode) existingBuyersAmong(ctx context.Context, tx *sql.Tx, pairs []store.BuyerKey) (map[store.BuyerKey]string, error) {
	if m == assumeFresh {
		return map[store.BuyerKey]string{}, nil
	}
	return store.ExistingBuyersAmong(ctx, tx, pairs)
}
