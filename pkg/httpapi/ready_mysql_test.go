package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestMySQLOutageDegradesButKeepsTheIngressReady: admission needs Redis and
// Kafka only, so a MySQL failover must not take every ingress out of its
// Kubernetes Service. /readyz answers 200 "degraded" naming mysql, and
// buyers are still admitted.
func TestMySQLOutageDegradesButKeepsTheIngressReady(t *testing.T) {
	mfd := testenv.NewFaultDialer()
	h := newHarness(t, harnessOpts{partitions: 1, mysqlFaults: mfd, storeTimeout: 500 * time.Millisecond})
	item := h.newItem(5, 1)
	if r := h.order(1, item, 1, ""); r.Code != http.StatusAccepted { // warms the item cache
		t.Fatalf("order before the outage: %d %s", r.Code, r.Body)
	}
	mfd.Cut()
	// Uncached, so each probe runs the checks: no waiting out the
	// readiness cache between the two states.
	readyzHandler := uncachedReadyz(h.srv)
	readyz := func() (int, map[string]any) {
		rec := httptest.NewRecorder()
		readyzHandler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("readyz body %q: %v", rec.Body.Bytes(), err)
		}
		return rec.Code, body
	}
	code, body := readyz()
	checks, _ := body["checks"].(map[string]any)
	if code != http.StatusOK || body["status"] != "degraded" || checks["mysql"] == "ok" || checks["redis"] != "ok" || checks["kafka"] != "ok" {
		t.Fatalf("/readyz with MySQL cut: %d %v, want 200 degraded naming mysql", code, body)
	}
	if r := h.order(2, item, 1, ""); r.Code != http.StatusAccepted {
		t.Fatalf("order during the MySQL outage: %d %s, want 202 (admission needs Redis and Kafka only)", r.Code, r.Body)
	}
	mfd.Restore()
	// The pool may first hand the ping a connection the cut broke: poll.
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		code, body = readyz()
		return code == http.StatusOK && body["status"] == "ok"
	}, "/readyz after MySQL is back: %v, want 200 ok", lazy(func() string { return fmt.Sprint(code, " ", body) }))
}
