package stock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// takeTickets takes n tickets of item for users from..from+n-1.
func takeTickets(t *testing.T, s *stock.Store, item, from int64, n int) {
	t.Helper()
	for i := range n {
		if _, _, err := s.TakeTicket(context.Background(), item, from+int64(i), fmt.Sprintf("%032x", from+int64(i)), time.Now().Add(-time.Hour), false); err != nil {
			t.Fatalf("ticket %d: %v", i, err)
		}
	}
}

// TestGateAdvancesAtTheRate: nothing moves before the start; from it, the
// serving position moves by the rate's worth of the time since the last
// move (fractions carried over), never past the tickets taken, and time
// with every ticket admitted is not banked for later arrivals. Many
// advancers at once (two gate holders overlapping) admit at the rate, not
// a multiple of it.
func TestGateAdvancesAtTheRate(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	if _, err := s.AdvanceGate(ctx, testenv.ItemID(), 10); !errors.Is(err, stock.ErrQueueNotWarmed) {
		t.Fatalf("unwarmed item: %v, want ErrQueueNotWarmed", err)
	}

	later := testenv.ItemID()
	now := time.Now()
	if err := s.Warm(ctx, stock.Snapshot{ItemID: later, Stock: 10, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), PerUserLimit: 1, Queue: true}); err != nil {
		t.Fatal(err)
	}
	takeTickets(t, s, later, 1, 5)
	if g, err := s.AdvanceGate(ctx, later, 1000); err != nil || g.Serving != 0 || g.Tickets != 5 {
		t.Fatalf("before the start: %+v %v, want serving 0 of 5", g, err)
	}

	// The tickets first, then the start (a meta-only warm moves it to now):
	// a slow machine's ticket taking must not eat into the second measured.
	item := testenv.ItemID()
	if err := s.Warm(ctx, stock.Snapshot{ItemID: item, Stock: 10, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), PerUserLimit: 1, Queue: true}); err != nil {
		t.Fatal(err)
	}
	takeTickets(t, s, item, 100, 1000)
	start := time.Now()
	if err := s.Warm(ctx, stock.Snapshot{ItemID: item, StartsAt: start, EndsAt: start.Add(time.Hour), PerUserLimit: 1, Queue: true, MetaOnly: true}); err != nil {
		t.Fatal(err)
	}
	// 50 a second, advanced by 4 callers at once every 5 ms for 1 s.
	const rate = 50
	stop := time.Now().Add(time.Second)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for time.Now().Before(stop) {
				if _, err := s.AdvanceGate(ctx, item, rate); err != nil {
					errs <- err
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	before := time.Since(start)
	g, err := s.AdvanceGate(ctx, item, rate)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	// The move happened between the call's start and its return (slow on a
	// loaded machine); 3 more either side for Redis' clock against this
	// host's.
	low, high := int64(before.Seconds()*rate)-3, int64(elapsed.Seconds()*rate)+3
	if g.Serving < low || g.Serving > high || g.Tickets != 1000 {
		t.Fatalf("after %s at %d/s: serving %d of %d, want %d to %d", elapsed, rate, g.Serving, g.Tickets, low, high)
	}

	// A fast rate catches up with every ticket and stops there...
	time.Sleep(20 * time.Millisecond)
	if g, _ = s.AdvanceGate(ctx, item, 100_000); g.Serving != 1000 {
		t.Fatalf("at 100000/s: serving %d, want all 1000", g.Serving)
	}
	// ... and idle time is not banked: new arrivals are admitted at the
	// rate from when they come, not at once.
	time.Sleep(300 * time.Millisecond)
	idleEnd := time.Now() // before the call: its move is at or after this
	if _, err := s.AdvanceGate(ctx, item, rate); err != nil {
		t.Fatal(err)
	}
	takeTickets(t, s, item, 5000, 100)
	g, _ = s.AdvanceGate(ctx, item, rate)
	// Only the time since the last move counts, the calls' and the 100
	// takes' own (tens of ms, hundreds on a loaded machine under -race),
	// never the 300 ms idle.
	if most := 1000 + time.Since(idleEnd).Milliseconds()*rate/1000 + 2; g.Serving > most || g.Tickets != 1100 {
		t.Fatalf("right after 100 late arrivals: serving %d of %d, want at most %d (no banked time)", g.Serving, g.Tickets, most)
	}
	if r, err := s.ReadGate(ctx, item); err != nil || r.Serving != g.Serving || r.Tickets != g.Tickets {
		t.Fatalf("read gate: %+v %v, want %+v", r, err, g)
	}
}
