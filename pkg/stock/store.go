package stock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Store runs the stock operations on Redis (a single node or a Cluster).
type Store struct {
	rdb redis.UniversalClient
	co  *Coalescer
}

// New returns a Store on rdb.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// WithCoalescer returns a Store whose hot-path calls (Admit, Ack, and the
// scripts other features run through Eval: the status cache's, the waiting
// room's) share round trips through co; the rest go straight to rdb.
// The caller closes co after the Store's last use.
func (s *Store) WithCoalescer(co *Coalescer) *Store {
	c := *s
	c.co = co
	return &c
}

// Eval runs another feature's script on the ledger's path: through the
// Coalescer when there is one, else alone with an exact "never sent"
// (sendonce.go). The waiting room's scripts (pkg/waitroom) and the status
// cache's (pkg/orderstatus) share the item's hash tag and the buyer's
// path, so they share the round trips too.
func (s *Store) Eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.run(ctx, script, keys, args...)
}

// run runs script on the Coalescer when there is one, else alone.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if s.co != nil {
		return s.co.EvalSha(ctx, script, keys, args...)
	}
	return runOnce(ctx, s.rdb, script, keys, args...) // exact NotSent: sendonce.go
}

// Client returns the underlying client (for health checks).
func (s *Store) Client() redis.UniversalClient { return s.rdb }

func unavailable(op string, err error) error { return Unavailable(op, err) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
