package waitroom_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// TestGateHoldsWhileThePipelineIsFull: with MaxInFlight, the gate admits
// nobody more while that many of the item's orders are reserved in Redis
// and not yet written (the consumers' backlog), banks none of the time it
// held, and admits at the rate again once the orders are written. Without
// the hold it admitted through the backlog (checked by the same passes on
// a gate without MaxInFlight). The gate runs on a clock the test steps, so
// each pass's admissions are exact.
func TestGateHoldsWhileThePipelineIsFull(t *testing.T) {
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	st := stock.New(rdb)
	ctx := context.Background()
	// Started (whole seconds: exact in MySQL and Redis), by Redis' clock
	// too, so the orders below are admitted.
	clock := newTestClock(time.Now().Truncate(time.Second))
	id := queuedItem(t, db, st, 100, clock.Now(), 100, 100)
	// Three orders reserved, none written yet.
	var rids []string
	for u := int64(1); u <= 3; u++ {
		rid := reqid.New(id, time.Now())
		if r, err := st.Admit(ctx, stock.AdmitRequest{ItemID: id, Buckets: 1, UserID: u, Qty: 1, RequestID: rid, Now: time.Now(), Granted: true}); err != nil || r.Code != stock.Admitted {
			t.Fatalf("admit %d: %+v %v", u, r, err)
		}
		rids = append(rids, rid)
	}
	if n, err := st.InFlight(ctx, id, 1); err != nil || n != 3 {
		t.Fatalf("in flight: %d %v, want 3", n, err)
	}
	newGate := func(maxInFlight int) (*waitroom.Gate, *waitroom.GateMetrics) {
		m := waitroom.NewGateMetrics(prometheus.NewRegistry())
		g := waitroom.NewGate(waitroom.GateConfig{LeaseKey: "fs:test:gate:" + testenv.Suffix() + t.Name(), MaxInFlight: maxInFlight},
			db, rdb, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
		waitroom.SetClock(g, clock.Now)
		return g, m
	}
	serving := func() int64 {
		g, err := waitroom.NewStore(st).ReadGate(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return g.Serving
	}
	pass := func(g *waitroom.Gate, after time.Duration) int64 {
		t.Helper()
		clock.Step(after)
		if err := g.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		return serving()
	}
	// Five passes 60 ms apart, from the start: 300 ms held.
	held, m := newGate(3)
	for i := range 5 {
		if s := pass(held, 60*time.Millisecond); s != 0 {
			t.Fatalf("3 orders in flight of at most 3, pass %d: serving %d, want 0 (held)", i+1, s)
		}
	}
	if n := testutil.ToFloat64(m.HeldBack); n != 5 {
		t.Fatalf("held back %v passes, want 5", n)
	}
	// Written: the gate goes on at the rate from the last held pass, with
	// none of the 300 ms it held banked (30 positions at 100 a second).
	if err := st.Settle(ctx, id, rids); err != nil {
		t.Fatal(err)
	}
	if s := pass(held, 0); s != 0 {
		t.Fatalf("first pass after the hold, at its time: serving %d, want 0 (no banked time)", s)
	}
	if s := pass(held, 50*time.Millisecond); s != 5 {
		t.Fatalf("50 ms after the hold at 100 a second: serving %d, want 5", s)
	}
	if s := pass(held, 200*time.Millisecond); s != 25 {
		t.Fatalf("250 ms after the hold at 100 a second: serving %d, want 25", s)
	}
	if n := testutil.ToFloat64(m.HeldBack); n != 5 {
		t.Fatalf("held back %v passes once written, want still 5", n)
	}
	// The same backlog again: a gate without MaxInFlight does not hold,
	// where the held one does.
	for u := int64(4); u <= 6; u++ {
		if r, err := st.Admit(ctx, stock.AdmitRequest{ItemID: id, Buckets: 1, UserID: u, Qty: 1, RequestID: reqid.New(id, time.Now()), Now: time.Now(), Granted: true}); err != nil || r.Code != stock.Admitted {
			t.Fatalf("admit %d: %+v %v", u, r, err)
		}
	}
	if s := pass(held, 100*time.Millisecond); s != 25 {
		t.Fatalf("3 orders in flight again: serving %d, want 25 (held)", s)
	}
	free, _ := newGate(0)
	if s := pass(free, 100*time.Millisecond); s != 35 {
		t.Fatalf("without MaxInFlight, 100 ms at 100 a second: serving %d, want 35", s)
	}
}
