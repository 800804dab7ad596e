package orderstatus

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// Store is the status cache in Redis: the cached status of each request
// (cache.go), the pay's in-doubt marker, the status poll's one-call read of
// a request (lookup.go) and the item's status channel (subscribe.go). Its
// keys are named by pkg/stock's key helpers (stock.Keys.Status,
// StatusChannel), with every other key of a bucket and its hash tag, and
// its scripts (lua/) read the ledger's reservations hash beside the status
// (a pending request is not marked; a poll sees its reservation). They run
// the way the ledger's do, through the ingress's coalescer when it has one
// and with an exact "never sent" (stock.Store.Eval); the batch puts run by
// stock.RunBatch.
type Store struct {
	// st is the ledger, whose Redis client (st.Client()) is asked for at
	// each call: a Store made over a nil stock.Store (a server built
	// without stores, to list its routes) fails only if it is used. Redis
	// failures are wrapped by stock.Unavailable, the one error every caller
	// answers 503 for.
	st *stock.Store
}

// NewStore returns the status cache over the ledger's client and script
// path.
func NewStore(st *stock.Store) *Store { return &Store{st: st} }

func (s *Store) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.st.Eval(ctx, script, keys, args...)
}
