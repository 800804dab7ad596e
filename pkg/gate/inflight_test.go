package gate_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/gate"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestGateHoldsWhileThePipelineIsFull: with MaxInFlight, the gate admits
// nobody more while that many of the item's orders are reserved in Redis
// and not yet written (the consumers' backlog), banks none of the time it
// held, and admits at the rate again once the orders are written. Without
// the hold it admitted through the backlog (checked by the same passes on
// a gate without MaxInFlight).
func TestGateHoldsWhileThePipelineIsFull(t *testing.T) {
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	st := stock.New(rdb)
	ctx := context.Background()
	now := time.Now()
	id := queuedItem(t, db, st, 100, now.Add(300*time.Millisecond), 100, 100)
	time.Sleep(time.Until(now.Add(400 * time.Millisecond)))
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
	newGate := func(maxInFlight int) (*gate.Gate, *gate.Metrics) {
		m := gate.NewMetrics(prometheus.NewRegistry())
		return gate.New(gate.Config{LeaseKey: "fs:test:gate:" + testenv.Suffix() + t.Name(), MaxInFlight: maxInFlight},
			db, rdb, m, slog.New(slog.NewTextHandler(io.Discard, nil))), m
	}
	serving := func() int64 {
		g, err := st.ReadGate(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return g.Serving
	}
	held, m := newGate(3)
	var lastHeld time.Time
	for range 5 {
		time.Sleep(60 * time.Millisecond)
		lastHeld = time.Now() // before the pass: its hold is at or after this
		if err := held.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s := serving(); s != 0 {
		t.Fatalf("3 orders in flight of at most 3: serving %d, want 0 (held)", s)
	}
	if n := testutil.ToFloat64(m.HeldBack); n != 5 {
		t.Fatalf("held back %v passes, want 5", n)
	}
	// Written: the gate goes on at the rate, with none of the 300 ms it
	// held banked (30 positions at 100 a second).
	if err := st.Settle(ctx, id, rids); err != nil {
		t.Fatal(err)
	}
	if err := held.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	// Only the time since the last held pass counts (plus 2 for the clocks
	// and the calls' own time).
	if s, most := serving(), time.Since(lastHeld).Milliseconds()*100/1000+2; s > most {
		t.Fatalf("first pass after the hold: serving %d, want at most %d (no banked time)", s, most)
	}
	time.Sleep(200 * time.Millisecond)
	if err := held.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if s, most := serving(), time.Since(lastHeld).Milliseconds()*100/1000+2; s < 15 || s > most {
		t.Fatalf("200 ms after the hold at 100 a second: serving %d, want 15 to %d", s, most)
	}
	// The same backlog without MaxInFlight does not hold.
	for u := int64(4); u <= 6; u++ {
		if r, err := st.Admit(ctx, stock.AdmitRequest{ItemID: id, Buckets: 1, UserID: u, Qty: 1, RequestID: reqid.New(id, time.Now()), Now: time.Now(), Granted: true}); err != nil || r.Code != stock.Admitted {
			t.Fatalf("admit %d: %+v %v", u, r, err)
		}
	}
	before := serving()
	free, _ := newGate(0)
	time.Sleep(100 * time.Millisecond)
	if err := free.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if s := serving(); s <= before {
		t.Fatalf("without MaxInFlight: serving %d after %d, want it to move", s, before)
	}
}
