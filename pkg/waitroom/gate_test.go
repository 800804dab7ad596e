package waitroom_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// queuedItem saves and warms an item of stock units whose waiting room
// opened a minute ago and whose sale starts at starts, at rate a second,
// and gives users 1..tickets a ticket each; it returns the item's id.
func queuedItem(t *testing.T, db *sql.DB, st *stock.Store, stockUnits int64, starts time.Time, rate, tickets int) int64 {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	id := testenv.ItemID()
	cat := catalog.New(db, st, testenv.NoLag)
	if _, err := cat.Put(ctx, store.Item{ID: id, Name: "g", PriceCents: 1, TotalStock: stockUnits, PerUserLimit: 1,
		StartsAt: starts, EndsAt: now.Add(time.Hour), ItemQueue: store.ItemQueue{Queue: true, QueueOpensAt: now.Add(-time.Minute), QueueRate: rate}}); err != nil {
		t.Fatal(err)
	}
	for i := range tickets {
		if _, _, err := waitroom.NewStore(st).TakeTicket(ctx, id, int64(i+1), fmt.Sprintf("%032x", i+1), now.Add(-time.Minute), false); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// newTestClock returns the gates' clock in a test, stepped by hand
// (waitroom.SetClock): a test about the gate's rate counts exact admissions
// per step instead of measuring the wall clock on a loaded machine. Safe
// for the gates' goroutines.
func newTestClock(at time.Time) *testingclock.FakeClock { return testingclock.NewFakeClock(at) }

// TestGateFailsOver: two reaper replicas run the gate under one lease; only
// the holder admits and exports the waiting gauge. When the holder stops
// (its lease given up) the other takes over and admissions go on at the
// item's rate. No gate at all admits nobody. The gates run on a clock the
// test steps, so the admissions are counted exactly.
func TestGateFailsOver(t *testing.T) {
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	st := stock.New(rdb)
	ctx := context.Background()
	// Started (whole seconds: exact in MySQL and Redis), by Redis' clock
	// too, so tickets are taken after it.
	clock := newTestClock(time.Now().Truncate(time.Second))
	id := queuedItem(t, db, st, 10, clock.Now(), 40, 200)
	key := "fs:test:gate:" + testenv.Suffix()
	type replica struct {
		m      *waitroom.GateMetrics
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(name string) replica {
		m := waitroom.NewGateMetrics(prometheus.NewRegistry())
		g := waitroom.NewGate(waitroom.GateConfig{Interval: 20 * time.Millisecond, Lease: 300 * time.Millisecond, LeaseKey: key, Holder: name},
			db, rdb, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
		waitroom.SetClock(g, clock.Now)
		c, cancel := context.WithCancel(ctx)
		r := replica{m: m, cancel: cancel, done: make(chan struct{})}
		go func() { defer close(r.done); _ = g.Run(c) }()
		return r
	}
	serving := func() int64 {
		g, err := waitroom.NewStore(st).ReadGate(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return g.Serving
	}
	if s := serving(); s != 0 {
		t.Fatalf("no gate running: serving %d, want 0", s)
	}

	a, b := start("a"), start("b")
	defer func() { a.cancel(); b.cancel(); <-a.done; <-b.done }()
	// A pass at the very start admits nobody: no time has passed on the
	// gates' clock (the waiting gauge is set at the end of a pass).
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
		return testutil.ToFloat64(a.m.Waiting)+testutil.ToFloat64(b.m.Waiting) == 200
	}, "the waiting gauges never read 200 of 200 tickets: no pass ran at the start, or one admitted someone")
	if s := serving(); s != 0 {
		t.Fatalf("passes at the start: serving %d, want 0", s)
	}
	// A second at 40 a second: 40 admitted, by whichever holds the gate.
	clock.Step(time.Second)
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool { return serving() == 40 },
		"a second at 40/s: serving never reached 40")
	held := testutil.ToFloat64(a.m.Held) + testutil.ToFloat64(b.m.Held)
	if held != 1 {
		t.Fatalf("holders: a %v b %v, want exactly one", testutil.ToFloat64(a.m.Held), testutil.ToFloat64(b.m.Held))
	}
	holder, other := a, b
	if testutil.ToFloat64(b.m.Held) == 1 {
		holder, other = b, a
	}
	// The gauge is set at the end of the pass that moved the position.
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool { return testutil.ToFloat64(holder.m.Waiting) == 160 },
		"the holder's waiting gauge never read 160 (200 tickets, 40 admitted)")
	if w := testutil.ToFloat64(other.m.Waiting); w != 0 {
		t.Errorf("the other's waiting gauge %v, want 0", w)
	}
	holder.cancel()
	<-holder.done
	// The clock has not moved since: nothing more admitted, by either.
	before := serving()
	if before != 40 {
		t.Fatalf("with the clock stopped after 40: serving %d, want still 40", before)
	}
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool { return testutil.ToFloat64(other.m.Held) == 1 }, "no takeover")
	// 40 a second goes on through the handover: half a second is 20 more,
	// all admitted by the new holder (the old one has stopped).
	clock.Step(500 * time.Millisecond)
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool { return serving() == before+20 },
		"after the takeover, half a second at 40/s: serving never reached %d", before+20)
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool { return testutil.ToFloat64(other.m.Admitted) >= 20 },
		"the new holder's admitted counter never reached the 20 since the takeover")
	if s := serving(); s != before+20 {
		t.Fatalf("with the clock stopped after the takeover's half second: serving %d, want still %d", s, before+20)
	}
}
