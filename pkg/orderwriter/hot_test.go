package orderwriter_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// 20,000 admitted requests for one hot item that MySQL has only 5,000 of
// (Redis was warmed with 20,000: an operator edit, a bad reload), spread over
// three partitions so up to three replicas write the same item row at once,
// while replicas start and stop (forcing rebalances and redelivery):
// exactly 5,000 ORDERED, 15,000 REJECTED sold_out, stock 0 in both stores,
// I1-I3 and I7.
func TestHotItemWithRebalancingReplicas(t *testing.T) {
	t.Parallel()
	const n, units = 20_000, 5_000
	e := newEnv(t, 3, units, n)
	msgs := e.admit(users(1, n))
	vals := encode(t, msgs)
	// The producer retried a part of the burst: 3,000 duplicates at the end.
	e.produce(append(vals, vals[:3_000]...), false)

	cfg := e.config()
	cfg.BatchSize = 500
	m := orderwriter.NewMetrics(prometheus.NewRegistry())
	a := e.start(cfg, nil, m)
	e.waitDecided(2_000, 90*time.Second)
	b := e.start(cfg, nil, m)
	e.waitDecided(6_000, 90*time.Second)
	c := e.start(cfg, nil, m)
	e.waitDecided(10_000, 90*time.Second)
	a.stop(t) // leaves the group mid-stream
	e.waitDecided(14_000, 90*time.Second)
	b.stop(t)
	d := e.start(cfg, nil, m)
	e.waitDrained(120 * time.Second)
	c.stop(t)
	d.stop(t)

	if got := e.count("SELECT COUNT(*) FROM request_outcomes WHERE outcome = 'ORDERED'"); got != units {
		t.Errorf("ORDERED = %d, want %d", got, units)
	}
	if got := e.count("SELECT COUNT(*) FROM request_outcomes WHERE outcome = 'REJECTED' AND reason = 'sold_out'"); got != n-units {
		t.Errorf("REJECTED sold_out = %d, want %d", got, n-units)
	}
	if got := e.count("SELECT stock FROM items WHERE id = ?", e.item); got != 0 {
		t.Errorf("MySQL stock = %d, want 0", got)
	}
	e.checkInvariants()
	ctx := context.Background()
	st, err := e.st.ReadState(ctx, e.item)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stock != 0 || st.Pending != 0 || st.Buyers != units {
		t.Errorf("redis: stock %d pending %d buyers %d; want 0, 0, %d (rejected buyers may try again)", st.Stock, st.Pending, st.Buyers, units)
	}
	// A sample of statuses: every request has a terminal one cached. An
	// UNPAID one lives only orderstatus.UnpaidStatusTTL, which a slow run (-race)
	// outlasts; pending 0 above shows its after-commit step ran.
	for i := 0; i < n; i += 97 {
		v, ok, err := orderstatus.Get(ctx, e.st, e.item, msgs[i].RequestID)
		dec, derr := store.GetDecision(ctx, e.db, msgs[i].RequestID)
		if err == nil && derr == nil && !ok && dec.Outcome == store.Ordered {
			continue
		}
		if err != nil || derr != nil || !ok {
			t.Fatalf("status of %s: %v %v %v", msgs[i].RequestID, ok, err, derr)
		}
		if want := map[store.Outcome]string{store.Ordered: orderstatus.Unpaid, store.Rejected: orderstatus.Rejected}[dec.Outcome]; v.Status != want {
			t.Errorf("status of %s = %s, want %s", msgs[i].RequestID, v.Status, want)
		}
	}
	t.Logf("rebalances seen: %v, retries: transient %v race %v",
		testutil.ToFloat64(m.Rebalances), testutil.ToFloat64(m.Retries.WithLabelValues("transient")), testutil.ToFloat64(m.Retries.WithLabelValues("race")))
}
