package orderwriter_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// A message for an item Redis knows but MySQL does not (an item whose
// creation never committed) is decided REJECTED unknown_item through the
// arbiter, not dead-lettered: its reservation is released (buyer mark
// cleared, no stock given back to an item MySQL cannot serve), its status
// is cached so the buyer's poll ends, and its neighbours are written.
func TestUnknownItemIsRejected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, 1, 10, 10)
	good := e.admit(users(1, 3))
	ghost := testenv.ItemID()
	now := time.Now()
	if err := e.st.Warm(ctx, stock.Snapshot{ItemID: ghost, Stock: 5, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: 1}); err != nil {
		t.Fatal(err)
	}
	rid := reqid.New(ghost, now)
	if res, err := e.st.Admit(ctx, stock.AdmitRequest{ItemID: ghost, UserID: 7, Qty: 1, RequestID: rid, Now: now}); err != nil || res.Code != stock.Admitted {
		t.Fatalf("admit on the Redis-only item: %+v %v", res, err)
	}
	ghostMsg := encode(t, []orderlog.OrderMessage{{V: orderlog.MessageVersion, RequestID: rid, ItemID: ghost, UserID: 7, Qty: 1, ReservedMs: now.UnixMilli()}})[0]
	gb := encode(t, good)
	e.produce([][]byte{gb[0], ghostMsg, gb[1], gb[2]}, true)

	m := orderwriter.NewMetrics(prometheus.NewRegistry())
	e.runUntilDrained(e.config(), m)

	if n := e.count("SELECT COUNT(*) FROM orders"); n != 3 {
		t.Errorf("orders = %d, want 3", n)
	}
	d, err := store.GetDecision(ctx, e.db, rid)
	if err != nil || d.Outcome != store.Rejected || d.Reason != "unknown_item" {
		t.Fatalf("decision of the unknown item's request = %+v, %v; want REJECTED unknown_item", d, err)
	}
	v, ok, err := orderstatus.Get(ctx, e.st, ghost, rid)
	if err != nil || !ok || v.Status != orderstatus.Rejected || v.Reason != "unknown_item" || v.UserID != 7 {
		t.Errorf("cached status = %+v %v %v; want REJECTED unknown_item of user 7", v, ok, err)
	}
	rs, err := e.st.ReadState(ctx, ghost)
	if err != nil || rs.Pending != 0 || rs.Buyers != 0 || rs.Stock != 4 {
		t.Errorf("Redis state of the unknown item %+v, %v: want no reservation, no buyer mark, stock 4 (not given back)", rs, err)
	}
	if got := testutil.ToFloat64(m.DLQ); got != 0 {
		t.Errorf("dlq_messages_total = %v, want 0 (decided, not dead-lettered)", got)
	}
	if got := testutil.ToFloat64(m.Outcomes.WithLabelValues("REJECTED", "unknown_item")); got != 1 {
		t.Errorf("outcomes_total{REJECTED,unknown_item} = %v, want 1", got)
	}
	e.checkInvariants()
}
