package gate_test

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

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/gate"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestGateFailsOver: two reaper replicas run the gate under one lease; only
// the holder admits and exports the waiting gauge. When the holder stops
// (its lease given up) the other takes over and admissions go on at the
// item's rate. No gate at all admits nobody.
// queuedItem saves and warms an item of stock units whose waiting room
// opened a minute ago and whose sale starts at starts, at rate a second,
// and gives users 1..tickets a ticket each; it returns the item's id.
func queuedItem(t *testing.T, db *sql.DB, st *stock.Store, stockUnits int64, starts time.Time, rate, tickets int) int64 {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	id := testenv.ItemID()
	cat := catalog.New(db, st, func(context.Context) (int64, error) { return 0, nil })
	if _, err := cat.Put(ctx, store.Item{ID: id, Name: "g", PriceCents: 1, TotalStock: stockUnits, PerUserLimit: 1,
		StartsAt: starts, EndsAt: now.Add(time.Hour), Queue: true, QueueOpensAt: now.Add(-time.Minute), QueueRate: rate}); err != nil {
		t.Fatal(err)
	}
	for i := range tickets {
		if _, _, err := st.TakeTicket(ctx, id, int64(i+1), fmt.Sprintf("%032x", i+1), now.Add(-time.Minute), false); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

func TestGateFailsOver(t *testing.T) {
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	st := stock.New(rdb)
	ctx := context.Background()
	now := time.Now()
	id := queuedItem(t, db, st, 10, now.Add(500*time.Millisecond), 40, 200)
	key := "fs:test:gate:" + testenv.Suffix()
	type replica struct {
		m      *gate.Metrics
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(name string) replica {
		m := gate.NewMetrics(prometheus.NewRegistry())
		g := gate.New(gate.Config{Interval: 20 * time.Millisecond, Lease: 300 * time.Millisecond, LeaseKey: key, Holder: name},
			db, rdb, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
		c, cancel := context.WithCancel(ctx)
		r := replica{m: m, cancel: cancel, done: make(chan struct{})}
		go func() { defer close(r.done); _ = g.Run(c) }()
		return r
	}
	serving := func() int64 {
		g, err := st.ReadGate(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return g.Serving
	}
	time.Sleep(time.Until(now.Add(700 * time.Millisecond)))
	if s := serving(); s != 0 {
		t.Fatalf("no gate running: serving %d, want 0", s)
	}

	a, b := start("a"), start("b")
	defer func() { a.cancel(); b.cancel(); <-a.done; <-b.done }()
	testenv.Eventually(t, 2*time.Second, 10*time.Millisecond, func() bool { return serving() > 5 }, "nobody admitted")
	held := testutil.ToFloat64(a.m.Held) + testutil.ToFloat64(b.m.Held)
	if held != 1 {
		t.Fatalf("holders: a %v b %v, want exactly one", testutil.ToFloat64(a.m.Held), testutil.ToFloat64(b.m.Held))
	}
	holder, other := a, b
	if testutil.ToFloat64(b.m.Held) == 1 {
		holder, other = b, a
	}
	if w := testutil.ToFloat64(holder.m.Waiting); w <= 0 || w >= 200 {
		t.Errorf("holder's waiting gauge %v, want between 0 and 200", w)
	}
	if w := testutil.ToFloat64(other.m.Waiting); w != 0 {
		t.Errorf("the other's waiting gauge %v, want 0", w)
	}
	holder.cancel()
	<-holder.done
	before, at := serving(), time.Now()
	testenv.Eventually(t, 2*time.Second, 10*time.Millisecond, func() bool { return testutil.ToFloat64(other.m.Held) == 1 }, "no takeover")
	time.Sleep(500 * time.Millisecond)
	after := serving()
	// 40 a second went on through the handover: about 20 in 0.5 s (the
	// moments with no holder are admitted by the next move, up to a
	// second's worth).
	rate := float64(after-before) / time.Since(at).Seconds()
	if rate < 25 || rate > 60 {
		t.Errorf("after the takeover %d -> %d: %.0f a second, want about 40", before, after, rate)
	}
	if n := testutil.ToFloat64(other.m.Admitted); n <= 0 {
		t.Errorf("the new holder's admitted counter %v", n)
	}
}
