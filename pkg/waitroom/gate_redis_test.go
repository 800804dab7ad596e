package waitroom_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// takeTickets takes n tickets of item for users from..from+n-1.
func takeTickets(t *testing.T, s *stock.Store, item, from int64, n int) {
	t.Helper()
	for i := range n {
		if _, _, err := waitroom.NewStore(s).TakeTicket(context.Background(), item, from+int64(i), fmt.Sprintf("%032x", from+int64(i)), time.Now().Add(-time.Hour), false); err != nil {
			t.Fatalf("ticket %d: %v", i, err)
		}
	}
}

// TestGateAdvancesAtTheRate: nothing moves before the start nor from the
// end; from the start, the serving position moves by the rate's worth of
// the time since the last move (fractions carried over), never past the
// tickets taken; time with every ticket admitted, or held, is not banked
// for later arrivals, and a gap with no gate at all is banked for a second
// at most. Many advancers at once (two gate holders overlapping) admit at
// the rate, not a multiple of it. The gate runs on a clock the test steps
// (Store.WithClock), so every count is exact.
func TestGateAdvancesAtTheRate(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64 // the gate's now, Unix ms
	s := stock.New(testenv.Redis(t))
	w := waitroom.NewStore(s).WithClock(func() time.Time { return time.UnixMilli(clock.Load()) })
	step := func(d time.Duration) { clock.Add(d.Milliseconds()) }
	ctx := context.Background()
	if _, err := w.AdvanceGate(ctx, testenv.ItemID(), 10, -1); !errors.Is(err, waitroom.ErrNotWarmed) {
		t.Fatalf("unwarmed item: %v, want ErrQueueNotWarmed", err)
	}
	// Tickets are taken by Redis' clock (before the end), the gate moves
	// by the test's: the window is real, the gate's time is stepped in it.
	start := time.Now().Truncate(time.Second)
	window := func(item int64, from time.Time) {
		t.Helper()
		if err := s.Warm(ctx, stock.Snapshot{ItemID: item, Stock: 10, StartsAt: from, EndsAt: from.Add(time.Hour), PerUserLimit: 1, Queue: true}); err != nil {
			t.Fatal(err)
		}
	}

	later := testenv.ItemID()
	window(later, start.Add(time.Hour))
	takeTickets(t, s, later, 1, 5)
	clock.Store(start.Add(time.Hour).UnixMilli() - 1)
	if g, err := w.AdvanceGate(ctx, later, 1000, -1); err != nil || g.Serving != 0 || g.Tickets != 5 {
		t.Fatalf("1 ms before the start: %+v %v, want serving 0 of 5", g, err)
	}
	clock.Store(start.Add(2 * time.Hour).UnixMilli())
	if g, err := w.AdvanceGate(ctx, later, 1000, -1); err != nil || g.Serving != 0 || g.Advanced != 0 {
		t.Fatalf("at the end: %+v %v, want serving 0 (nothing moves from the end on)", g, err)
	}

	item := testenv.ItemID()
	window(item, start)
	takeTickets(t, s, item, 100, 1000)
	clock.Store(start.UnixMilli())
	if g, err := w.AdvanceGate(ctx, item, 50, -1); err != nil || g.Serving != 0 || g.Tickets != 1000 {
		t.Fatalf("at the start: %+v %v, want serving 0 of 1000", g, err)
	}
	// 50 a second for 1 s, in steps of 5 ms (a quarter of an admission
	// each: the fractions carry over), each step advanced by 4 callers at
	// once.
	const rate = 50
	for range 200 {
		step(5 * time.Millisecond)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				if _, err := w.AdvanceGate(ctx, item, rate, -1); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	g, err := w.AdvanceGate(ctx, item, rate, -1)
	if err != nil || g.Serving != rate || g.Tickets != 1000 || g.Advanced != 0 {
		t.Fatalf("1 s at %d/s by 4 callers at once: %+v %v, want serving exactly %d of 1000", rate, g, err, rate)
	}

	// A fast rate catches up with every ticket and stops there...
	step(20 * time.Millisecond)
	if g, err = w.AdvanceGate(ctx, item, 100_000, -1); err != nil || g.Serving != 1000 || g.Advanced != 950 {
		t.Fatalf("at 100000/s: %+v %v, want all 1000 (950 more)", g, err)
	}
	// ... and idle time is not banked: new arrivals are admitted at the
	// rate from when they come, not at once.
	step(300 * time.Millisecond)
	if g, err = w.AdvanceGate(ctx, item, rate, -1); err != nil || g.Serving != 1000 {
		t.Fatalf("idle: %+v %v, want serving 1000", g, err)
	}
	takeTickets(t, s, item, 5000, 100)
	if g, err = w.AdvanceGate(ctx, item, rate, -1); err != nil || g.Serving != 1000 || g.Tickets != 1100 {
		t.Fatalf("right after 100 late arrivals: %+v %v, want serving 1000 of 1100 (no banked time)", g, err)
	}
	step(100 * time.Millisecond)
	if g, err = w.AdvanceGate(ctx, item, rate, -1); err != nil || g.Serving != 1005 {
		t.Fatalf("100 ms later: %+v %v, want serving 1005", g, err)
	}
	// Held for 500 ms (the pipeline full): nothing moves, and none of it
	// is banked.
	step(500 * time.Millisecond)
	if g, err = w.HoldGate(ctx, item); err != nil || g.Serving != 1005 || g.Advanced != 0 {
		t.Fatalf("hold: %+v %v, want serving 1005", g, err)
	}
	step(100 * time.Millisecond)
	if g, err = w.AdvanceGate(ctx, item, rate, -1); err != nil || g.Serving != 1010 {
		t.Fatalf("100 ms after the hold: %+v %v, want serving 1010 (the hold's time not banked)", g, err)
	}
	// No gate for 5 s (every reaper down): one second's worth, no burst.
	step(5 * time.Second)
	if g, err = w.AdvanceGate(ctx, item, rate, -1); err != nil || g.Serving != 1010+rate {
		t.Fatalf("after 5 s with no gate: %+v %v, want serving %d (a second banked at most)", g, err, 1010+rate)
	}
	if r, err := w.ReadGate(ctx, item); err != nil || r.Serving != g.Serving || r.Tickets != g.Tickets {
		t.Fatalf("read gate: %+v %v, want %+v", r, err, g)
	}
}

// TestGateAdvancesByRedisClock runs the gate on Redis' TIME (no test
// clock), as production does: nothing moves before the start; after it, a
// gap since the start is banked for a second at most (exactly one
// admission at 1 a second, however long ago the start was), and the
// position never passes the tickets taken.
func TestGateAdvancesByRedisClock(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	w := waitroom.NewStore(s)
	ctx := context.Background()
	now := time.Now()
	later := testenv.ItemID()
	if err := s.Warm(ctx, stock.Snapshot{ItemID: later, Stock: 10, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), PerUserLimit: 1, Queue: true}); err != nil {
		t.Fatal(err)
	}
	takeTickets(t, s, later, 1, 5)
	if g, err := w.AdvanceGate(ctx, later, 1000, -1); err != nil || g.Serving != 0 || g.Tickets != 5 {
		t.Fatalf("before the start: %+v %v, want serving 0 of 5", g, err)
	}
	// Started a minute ago (far beyond any skew of Redis' clock against
	// this host's), one item moved at 1 a second, one at 100000.
	started := func(tickets int) int64 {
		t.Helper()
		item := testenv.ItemID()
		if err := s.Warm(ctx, stock.Snapshot{ItemID: item, Stock: 10, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1, Queue: true}); err != nil {
			t.Fatal(err)
		}
		takeTickets(t, s, item, 1, tickets)
		return item
	}
	if g, err := w.AdvanceGate(ctx, started(20), 1, -1); err != nil || g.Serving != 1 || g.Advanced != 1 {
		t.Fatalf("first move at 1/s, a minute after the start: %+v %v, want exactly 1 (a second banked at most)", g, err)
	}
	item := started(20)
	if g, err := w.AdvanceGate(ctx, item, 100_000, -1); err != nil || g.Serving != 20 || g.Tickets != 20 {
		t.Fatalf("at 100000/s: %+v %v, want all 20 and no more", g, err)
	}
}
