package stock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store runs the stock operations on Redis (a single node or a Cluster).
type Store struct {
	rdb redis.UniversalClient
	co  *Coalescer
	// now, when set (WithClock), is the clock the gate's moves judge time
	// by instead of Redis' TIME; nil in production.
	now func() time.Time
}

// New returns a Store on rdb.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// WithCoalescer returns a Store whose hot-path calls (Admit, Ack,
// LookupRequest, PutStatus) share round trips through co; the rest go
// straight to rdb.
// The caller closes co after the Store's last use.
func (s *Store) WithCoalescer(co *Coalescer) *Store {
	c := *s
	c.co = co
	return &c
}

// WithClock returns a Store whose gate moves (AdvanceGate, HoldGate) take
// the time from now instead of Redis' TIME, so a test about the gate's
// rate steps a clock and counts exact admissions rather than waiting on
// the wall clock. Production never sets it: every gate holder, and
// admit.lua, must judge the sale by Redis' one clock.
func (s *Store) WithClock(now func() time.Time) *Store {
	c := *s
	c.now = now
	return &c
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

func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
