package stock

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// StatusRank orders buyer-visible statuses so the cache never moves backwards.
type StatusRank int

// Ranks: an UNPAID order may become PAID or CANCELLED; those and REJECTED are final.
const (
	RankUnpaid StatusRank = 1
	RankFinal  StatusRank = 2
)

// StatusTTL is how long a cached final status lives; MySQL answers after
// that.
const StatusTTL = 30 * time.Minute

// UnpaidStatusTTL is how long a cached UNPAID lives. UNPAID is the one cached
// status that a later write replaces (PAID, CANCELLED), and without
// FLASHSALE_REDIS_WAIT_REPLICAS a Redis failover can lose that later write:
// the promoted replica then serves the older UNPAID. This bounds how long a
// buyer who paid can read UNPAID after a failover, at the cost of one MySQL
// read (shared per request) per poll of an UNPAID order per period.
const UnpaidStatusTTL = 5 * time.Second

// ttl is how long a status of this rank stays cached.
func (r StatusRank) ttl() time.Duration {
	if r < RankFinal {
		return UnpaidStatusTTL
	}
	return StatusTTL
}

// PutStatus caches the JSON status of a request unless a newer one is cached.
func (s *Store) PutStatus(ctx context.Context, itemID int64, requestID string, rank StatusRank, json []byte) error {
	keys, args := statusPutCall(itemID, requestID, rank, json)
	err := s.run(ctx, statusPutScript, keys, args...).Err()
	if err != nil {
		return unavailable("stock: put status", err)
	}
	return nil
}

// statusPutCall is status_put.lua's keys and arguments: the key, then rank,
// JSON, TTL and the item's status channel with the request id to publish.
func statusPutCall(itemID int64, requestID string, rank StatusRank, json []byte) ([]string, []any) {
	k := RequestKeys(itemID, requestID)
	return []string{k.Status(requestID)},
		[]any{int(rank), json, rank.ttl().Milliseconds(), k.StatusChannel(), requestID}
}

// GetStatus returns the cached JSON status of a request, if any.
func (s *Store) GetStatus(ctx context.Context, itemID int64, requestID string) ([]byte, bool, error) {
	v, err := s.rdb.Get(ctx, RequestKeys(itemID, requestID).Status(requestID)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, unavailable("stock: get status", err)
	}
	_, js, ok := strings.Cut(v, "|")
	return []byte(js), ok, nil
}
