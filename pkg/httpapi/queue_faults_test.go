package httpapi

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// TestQueueRedisStalled: with Redis SIGSTOPped mid-sale, every waiting-room
// call is a 503 that does not hang (a ticket, a ticket's status, an order
// with a good grant, the admin view) and the gate's passes fail; once
// Redis answers,
// a retried ticket is the same one, the gate moves on, the order goes
// through once, and the audit is exact.
func TestQueueRedisStalled(t *testing.T) {
	pr := testenv.StartPrivateRedis(t)
	const storeTimeout = 300 * time.Millisecond
	h := newHarness(t, harnessOpts{partitions: 1, rdb: pr.Client(storeTimeout), storeTimeout: storeTimeout,
		ingress: func(in *config.Ingress) { in.IPRateLimit, in.StatusWaitMax, in.StatusWaiters = 0, 30*time.Second, 100 }})
	gm := h.runGate()
	now := time.Now()
	item := testenv.ItemID()
	h.putRatedItem(item, 10, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour), 1000)
	_, a := h.take(21, item)
	granted := h.admitted(21, item, a.Ticket, 5*time.Second)

	failedBefore := testutil.ToFloat64(gm.PassFailures)
	pr.Pause()
	calls := []struct {
		name         string
		method, path string
		body         string
		hdr          map[string]string
	}{
		{"take a ticket", http.MethodPost, fmt.Sprintf("/api/v1/items/%d/queue", item), "", h.as(22)},
		{"ticket status", http.MethodGet, fmt.Sprintf("/api/v1/items/%d/queue/%s", item, a.Ticket), "", h.as(21)},
		{"order with a grant", http.MethodPost, "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":%q}`, item, granted.AdmissionGrant), h.as(21)},
		{"admin view", http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/queue", item), "", h.admin()},
	}
	for _, c := range calls {
		start := time.Now()
		r := h.do(c.method, c.path, c.body, c.hdr)
		d := time.Since(start)
		t.Logf("%s with redis stalled: %d %s in %v", c.name, r.Code, r.Body, d)
		if r.Code != http.StatusServiceUnavailable {
			t.Errorf("%s with redis stalled: %d %s, want 503", c.name, r.Code, r.Body)
		}
		// Only a guard against a hang (10 times a few bounded calls): how
		// fast the 503 comes is not asserted.
		if d > 10*(3*storeTimeout+time.Second) {
			t.Errorf("%s: 503 took %v with a store timeout of %v", c.name, d, storeTimeout)
		}
	}
	// The stall lasts until the gate has failed a pass on it (its own
	// store timeout, 2 s, bounds one).
	testenv.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		return testutil.ToFloat64(gm.PassFailures) > failedBefore
	}, "no gate pass failed with redis stalled")
	pr.Resume()

	// The ticket call may have run when Redis woke: a retry is the same
	// ticket either way, and one ticket per buyer holds.
	r1, t1 := h.take(22, item)
	r2, t2 := h.take(22, item)
	if (r1.Code != http.StatusCreated && r1.Code != http.StatusOK) || r2.Code != http.StatusOK || t1.Ticket != t2.Ticket {
		t.Fatalf("ticket after the stall: %d %s then %d %s", r1.Code, r1.Body, r2.Code, r2.Body)
	}
	h.admitted(22, item, t1.Ticket, 5*time.Second)
	// The order may have run late too: now it is 202 or, if it had,
	// 409 already_purchased naming the request that holds it.
	fresh := h.admitted(21, item, a.Ticket, 5*time.Second)
	o := h.orderWith(21, item, fresh.AdmissionGrant)
	if o.Code != http.StatusAccepted && o.Code != http.StatusConflict {
		t.Fatalf("order after the stall: %d %s", o.Code, o.Body)
	}
	st := stock.New(h.rdb)
	if g, err := waitroom.NewStore(st).ReadGate(t.Context(), item); err != nil || g.Tickets != 2 || g.Serving != 2 {
		t.Errorf("gate after the stall: %+v %v, want 2 tickets both admitted", g, err)
	}
	if left := h.redisStock(item); left != 9 {
		t.Errorf("redis stock %d after one order, want 9", left)
	}
	if a := h.do(http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/audit", item), "", h.admin()); a.Code != http.StatusOK || a.json(t)["ok"] != true {
		t.Errorf("audit after: %d %s", a.Code, a.Body)
	}
}
