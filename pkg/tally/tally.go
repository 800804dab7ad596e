package tally

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Accepted is the outcome of a 202; every other outcome is the API's error
// code of the answer (sold_out, rate_limited, ...).
const Accepted = "accepted"

// Known are the outcomes a read shows even at zero, so a client always
// finds the keys the console draws.
var Known = []string{Accepted, "sold_out", "already_purchased", "rate_limited", "unavailable",
	"outcome_unknown", "sale_ended", "sale_not_active", "stock_moving", "invalid_qty"}

// maxItems bounds the items counted at once in one process: an item id is
// the client's to choose, so without a bound a buyer could fill memory with
// made-up ids. Idle items leave after idleFor; past the bound new items
// are not counted (Dropped says how many answers were not).
const maxItems = 10_000

// idleFor is how long an item with no answer stays in memory.
const idleFor = time.Minute

// Tally is one process's counts, and their flusher.
type Tally struct {
	items   sync.Map // int64 -> *counts
	n       atomic.Int64
	dropped atomic.Int64

	rdb       redis.UniversalClient
	every     time.Duration
	timeout   time.Duration
	idleAfter time.Duration // idleFor; a test's to shorten
	log       *slog.Logger

	flushMu   sync.Mutex // one flush at a time: the loop's and Close's
	failing   bool       // under flushMu: the last flush failed (log changes only)
	stop      chan struct{}
	done      chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
}

// counts are one item's answers since the last flush.
type counts struct {
	// mu is read-held by every Record and held by the eviction, so an
	// entry that left the map takes no more counts (they would be lost).
	mu      sync.RWMutex
	dead    bool
	idle    int      // flushes in a row with nothing to add; the flusher's
	answers sync.Map // outcome string -> *atomic.Int64
	lat     [nBuckets]atomic.Int64
	sumUS   atomic.Int64 // sum of the 202 latencies, microseconds
}

// New returns a Tally that adds its counts to rdb every `every` (each flush
// bounded by timeout) once Start is called.
func New(rdb redis.UniversalClient, every, timeout time.Duration, log *slog.Logger) *Tally {
	return &Tally{rdb: rdb, every: every, timeout: timeout, idleAfter: idleFor, log: log,
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Record counts one answer for item: outcome is Accepted or the API's error
// code; d, the answer's latency, is counted for Accepted only.
func (t *Tally) Record(item int64, outcome string, d time.Duration) {
	for {
		c := t.entry(item)
		if c == nil {
			t.dropped.Add(1)
			return
		}
		c.mu.RLock()
		if c.dead { // evicted between the load and the lock: take the new one
			c.mu.RUnlock()
			continue
		}
		c.counter(outcome).Add(1)
		if outcome == Accepted {
			c.lat[bucketOf(d)].Add(1)
			c.sumUS.Add(d.Microseconds())
		}
		c.mu.RUnlock()
		return
	}
}

// Dropped is how many answers were not counted because maxItems items were
// counted already.
func (t *Tally) Dropped() int64 { return t.dropped.Load() }

func (t *Tally) entry(item int64) *counts {
	if v, ok := t.items.Load(item); ok {
		return v.(*counts)
	}
	if t.n.Load() >= maxItems {
		return nil
	}
	v, loaded := t.items.LoadOrStore(item, &counts{})
	if !loaded {
		t.n.Add(1)
	}
	return v.(*counts)
}

func (c *counts) counter(outcome string) *atomic.Int64 {
	if v, ok := c.answers.Load(outcome); ok {
		return v.(*atomic.Int64)
	}
	v, _ := c.answers.LoadOrStore(outcome, new(atomic.Int64))
	return v.(*atomic.Int64)
}
