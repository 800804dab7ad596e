package orderwriter_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Every message delivered twice, some ten times, shuffled over three
// partitions: exactly one order each, stock exact, statuses cached.
func TestDuplicatesAndReordering(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, 100, 100)
	msgs := e.admit(users(1, 60))
	var vals [][]byte
	for i, b := range encode(t, msgs) {
		times := 2
		if i%6 == 0 {
			times = 10
		}
		for range times {
			vals = append(vals, b)
		}
	}
	rand.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	e.produce(vals, false)

	m := orderwriter.NewMetrics(prometheus.NewRegistry())
	cfg := e.config()
	cfg.BatchSize = 16
	e.runUntilDrained(cfg, m)

	if n := e.count("SELECT COUNT(*) FROM orders"); n != 60 {
		t.Errorf("orders = %d, want 60", n)
	}
	if n := e.count("SELECT stock FROM items WHERE id = ?", e.item); n != 40 {
		t.Errorf("MySQL stock = %d, want 40", n)
	}
	e.checkInvariants()
	ctx := context.Background()
	for _, m := range msgs {
		v, ok, err := orderstatus.Get(ctx, e.st, e.item, m.RequestID)
		if err != nil || !ok || v.Status != orderstatus.Unpaid || v.OrderID == 0 || v.ExpiresAt == nil {
			t.Fatalf("status of %s = %+v, %v, %v", m.RequestID, v, ok, err)
		}
		if d := time.Until(*v.ExpiresAt); d < 14*time.Minute || d > 16*time.Minute {
			t.Errorf("expires_at %v is not now + 15m", v.ExpiresAt)
		}
	}
	st, err := e.st.ReadState(ctx, e.item)
	if err != nil || st.Pending != 0 || st.Stock != 40 {
		t.Errorf("redis state %+v, %v: want no pending reservations and stock 40", st, err)
	}
	if got := testutil.ToFloat64(m.Outcomes.WithLabelValues("ORDERED", "")); got != 60 {
		t.Errorf("outcomes_total{ORDERED} = %v, want 60", got)
	}
}

// A request already ABORTED by the ingress is dropped: no order, no stock change.
func TestAbortedRequestIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 10, 10)
	msgs := e.admit(users(1, 3))
	ctx := context.Background()
	ab := msgs[1]
	won, _, err := store.Decide(ctx, e.db, store.Decision{RequestID: ab.RequestID, ItemID: e.item, UserID: ab.UserID, Qty: ab.Qty,
		Outcome: store.Aborted, Reason: store.ReasonPublishFailed})
	if err != nil || !won {
		t.Fatalf("abort: %v %v", won, err)
	}
	if _, err := e.st.Release(ctx, e.item, ab.RequestID, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil {
		t.Fatal(err)
	}
	e.produce(encode(t, msgs), true)
	e.runUntilDrained(e.config(), nil)

	if n := e.count("SELECT COUNT(*) FROM orders WHERE request_id = ?", ab.RequestID); n != 0 {
		t.Errorf("aborted request got %d orders", n)
	}
	if n := e.count("SELECT COUNT(*) FROM orders"); n != 2 {
		t.Errorf("orders = %d, want 2", n)
	}
	if n := e.count("SELECT stock FROM items WHERE id = ?", e.item); n != 8 {
		t.Errorf("MySQL stock = %d, want 8 (the aborted unit untouched)", n)
	}
	d, err := store.GetDecision(ctx, e.db, ab.RequestID)
	if err != nil || d.Outcome != store.Aborted {
		t.Errorf("decision %+v %v: want ABORTED kept", d, err)
	}
	e.checkInvariants()
}

// A second request of a buyer that slipped past Redis (its buyer mark was
// lost) is REJECTED duplicate_buyer, in the same batch and in a later one, and
// its unit goes back to Redis.
func TestDuplicateBuyer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 10, 10)
	ctx := context.Background()
	first := e.admit([]int64{7, 8})
	// Redis forgets the buyers; they are admitted a second time.
	if err := e.st.Client().HDel(ctx, stock.KeysOf(e.item).Holders, "7", "8").Err(); err != nil {
		t.Fatal(err)
	}
	second := e.admit([]int64{7, 8})
	// user 7: both requests in one batch; user 8: the second comes later.
	e.produce(encode(t, []orderlog.OrderMessage{first[0], second[0], first[1]}), true)
	r := e.start(e.config(), nil, nil)
	e.waitDecided(3, 60*time.Second)
	e.produce(encode(t, second[1:]), true)
	e.waitDrained(60 * time.Second)
	r.stop(t)

	for _, m := range second {
		d, err := store.GetDecision(ctx, e.db, m.RequestID)
		if err != nil || d.Outcome != store.Rejected || d.Reason != store.ReasonDuplicateBuyer {
			t.Errorf("second request of %d: %+v %v, want REJECTED duplicate_buyer", m.UserID, d, err)
		}
		v, ok, _ := orderstatus.Get(ctx, e.st, e.item, m.RequestID)
		if !ok || v.Status != orderstatus.Rejected || v.Reason != store.ReasonDuplicateBuyer {
			t.Errorf("cached status %+v", v)
		}
	}
	if n := e.count("SELECT COUNT(*) FROM orders"); n != 2 {
		t.Errorf("orders = %d, want 2", n)
	}
	// The buyer mark names the order each buyer holds, not the rejected
	// request that set it again, so the buyer can find the order to pay.
	for _, m := range first {
		if rid, held, _, err := e.st.HeldBy(ctx, e.item, 0, m.UserID); err != nil || !held || rid != m.RequestID {
			t.Errorf("buyer mark of %d names %q (%v %v), want their order's request %s", m.UserID, rid, held, err, m.RequestID)
		}
	}
	e.checkInvariants()
}

// Poison messages (bad JSON, unknown version) land in the DLQ with their
// error and original bytes; the good ones around them are written and every
// offset is committed. (A message for an item MySQL lacks is not poison: it
// is decided, see TestUnknownItemIsRejected.)
func TestPoisonGoesToDLQ(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 10, 10)
	good := e.admit(users(1, 4))
	gb := encode(t, good)
	poison := [][]byte{
		[]byte(`{not json`),
		[]byte(`{"v":2,"request_id":"` + good[0].RequestID + `","item_id":1,"user_id":1,"qty":1}`),
	}
	e.produce([][]byte{gb[0], poison[0], gb[1], poison[1], gb[2], gb[3]}, true)
	m := orderwriter.NewMetrics(prometheus.NewRegistry())
	e.runUntilDrained(e.config(), m)

	if n := e.count("SELECT COUNT(*) FROM orders"); n != 4 {
		t.Errorf("orders = %d, want 4", n)
	}
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Topic: e.dlq, Partition: 0, MaxWait: 200 * time.Millisecond})
	defer rd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wantErr := []string{"poison", "unknown version"}
	for i := range poison {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("dlq message %d: %v", i, err)
		}
		if string(m.Value) != string(poison[i]) {
			t.Errorf("dlq message %d = %q, want the original %q", i, m.Value, poison[i])
		}
		h := map[string]string{}
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		if !strings.Contains(h[orderwriter.HeaderError], wantErr[i]) || h[orderwriter.HeaderTopic] != e.topic || h[orderwriter.HeaderOffset] == "" {
			t.Errorf("dlq message %d headers %v: want error containing %q", i, h, wantErr[i])
		}
	}
	if got := testutil.ToFloat64(m.DLQ); got != 2 {
		t.Errorf("dlq_messages_total = %v, want 2", got)
	}
	e.checkInvariants()
}
