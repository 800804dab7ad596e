package waitroom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// The waiting room's refusals of TakeTicket (ticket_take.lua): the queue
// has not opened yet by Redis' clock, the sale has ended, the caller found
// the item sold out, or the item is not warmed (no meta in Redis).
var (
	ErrNotOpen   = errors.New("waitroom: queue not open yet")
	ErrEnded     = errors.New("waitroom: sale ended")
	ErrSoldOut   = errors.New("waitroom: sold out")
	ErrNotWarmed = errors.New("waitroom: item not warmed")
)

// Store is the waiting room's state in Redis: the tickets (tickets.go),
// the gate's serving position (gate_redis.go) and the waitlist's pool and
// offers (waitlist.go). Its keys are named by stock.QueueKeysOf: they carry
// the item's bucket 0 hash tag, next to the ledger's meta, because the
// ledger's own scripts (admit.lua claims an offer, restore.lua fills the
// pool) touch some of them in the same step. Its scripts (lua/) run the
// way the ledger's do, through the ingress's coalescer when it has one and
// with an exact "never sent" (stock.Store.Eval), so a refused or cut call
// is told from one that may have run.
type Store struct {
	st *stock.Store
	// now, when set (WithClock), is the clock the gate's moves judge time
	// by instead of Redis' TIME; nil in production.
	now func() time.Time
}

// NewStore returns the waiting room's store over the ledger's client and
// script path.
func NewStore(st *stock.Store) *Store { return &Store{st: st} }

// client is the ledger's Redis client, asked for at each call: a Store
// made over a nil stock.Store (a server built without stores, to list its
// routes) fails only if it is used.
func (s *Store) client() redis.UniversalClient { return s.st.Client() }

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

func (s *Store) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return s.st.Eval(ctx, script, keys, args...)
}

// unavailable wraps a failure to reach Redis in stock.ErrUnavailable, the
// one error every caller answers 503 for.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, stock.ErrUnavailable, err)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
