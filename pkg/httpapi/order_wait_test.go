package httpapi

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
)

// TestOrderWaitTimesTheAdmission: POST /api/v1/orders?wait= with no order
// writer running is answered 202 PENDING, with the status view, at the end
// of its wait, not before; and the request's latency in
// flashsale_http_request_duration_seconds is the admission's alone: the
// buyer asked for the wait, and the order latency's alert must not fire on
// it. A wait that is not a duration is 400 invalid_wait and reserves
// nothing.
func TestOrderWaitTimesTheAdmission(t *testing.T) {
	h := waitHarness(t, 100)
	item := h.newItem(10, 1)
	body := fmt.Sprintf(`{"item_id":%d,"qty":1}`, item)
	for _, bad := range []string{"abc", "", "1m", "-1s", "1234567s"} {
		r := h.do(http.MethodPost, "/api/v1/orders?wait="+bad, body, h.as(31))
		if r.Code != http.StatusBadRequest || r.json(t)["error"] != "invalid_wait" {
			t.Fatalf("wait=%q: %d %s, want 400 invalid_wait", bad, r.Code, r.Body)
		}
	}
	if n := h.redisStock(item); n != 10 {
		t.Fatalf("stock %d after the refused waits, want 10: something was reserved", n)
	}

	sum0, count0 := h.latency("/api/v1/orders", http.MethodPost)
	const wait = 3 * time.Second
	sent := time.Now()
	r := h.do(http.MethodPost, "/api/v1/orders?wait=3s", body, h.as(31))
	at := time.Now()
	if r.Code != http.StatusAccepted {
		t.Fatalf("order with wait: %d %s, want 202", r.Code, r.Body)
	}
	v := decode[orderstatus.View](t, r)
	if v.Status != orderstatus.Pending || v.RequestID == "" || v.ItemID != item || v.Qty != 1 {
		t.Fatalf("202 body %s: want the PENDING status view of the order", r.Body)
	}
	if answeredBefore(timedStatus{at: at}, sent, wait) {
		t.Fatalf("answered after %v, before its %v wait ended with nothing to end it", at.Sub(sent), wait)
	}
	if n := h.redisStock(item); n != 9 {
		t.Fatalf("stock %d after one order, want 9", n)
	}
	sum, count := h.latency("/api/v1/orders", http.MethodPost)
	if count-count0 != 1 || sum-sum0 >= wait.Seconds() {
		t.Fatalf("POST /api/v1/orders latency: %d observed, %.3f s; want the one order, timed without its %v wait", count-count0, sum-sum0, wait)
	}
}

// latency is the sample count and sum of route's and method's
// flashsale_http_request_duration_seconds.
func (h *harness) latency(route, method string) (sum float64, count uint64) {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "flashsale_http_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == route && labels["method"] == method {
				return m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0, 0
}

// TestOrderWaitWithAFailedPublishLeavesNoWait: an order with ?wait= whose
// wait was registered before its publish (orderstatus.Reader.Expect), and
// whose publish then failed, is answered with the refusal, not held for
// its wait, and its wait is released: flashsale_status_waiting_polls is
// back to 0 and the stock is back. Without the release every such order
// would hold one of FLASHSALE_STATUS_WAITERS until the process ended.
func TestOrderWaitWithAFailedPublishLeavesNoWait(t *testing.T) {
	fd := testenv.NewFaultDialer()
	h := newHarness(t, harnessOpts{partitions: 1, transport: &kafka.Transport{Dial: fd.DialContext},
		ingress: func(in *config.Ingress) {
			in.PublishTimeout, in.StatusWaitMax, in.StatusWaiters = time.Second, 30*time.Second, 100
		}})
	item := h.newItem(10, 1)
	body := fmt.Sprintf(`{"item_id":%d,"qty":1}`, item)
	// One order through, so the item's status subscription is up and the
	// failed order's wait is registered as a subscribed one.
	if r := h.do(http.MethodPost, "/api/v1/orders?wait=5s", body, h.as(70)); r.Code != http.StatusAccepted {
		t.Fatalf("healthy order: %d %s", r.Code, r.Body)
	}
	fd.Cut()
	const wait = 20 * time.Second
	sent := time.Now()
	r := h.do(http.MethodPost, "/api/v1/orders?wait=20s", body, h.as(71))
	if r.Code != http.StatusServiceUnavailable {
		t.Fatalf("order with Kafka cut: %d %s, want 503", r.Code, r.Body)
	}
	if !answeredBefore(timedStatus{at: time.Now()}, sent, wait) {
		t.Fatalf("the refusal waited out the order's %v wait", wait)
	}
	if n := h.gauge("flashsale_status_waiting_polls"); n != 0 {
		t.Fatalf("%v status waits registered after the refused order, want 0", n)
	}
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool { return h.redisStock(item) == 9 },
		"the refused order's unit did not come back: stock is not 9 after one order and one refused")
}

// gauge is the value of h's unlabelled gauge name; a gauge h does not
// export fails the test.
func (h *harness) gauge(name string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	h.t.Fatalf("no gauge %s", name)
	return 0
}
