package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
)

// waitHarness is a harness whose polls may wait up to 30 s, at most
// waiters at once.
func waitHarness(t *testing.T, waiters int) *harness {
	return newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) {
		in.StatusWaitMax, in.StatusWaiters = 30*time.Second, waiters
	}})
}

// answeredBefore reports whether r, a poll sent at sent with ?wait=wait,
// was answered before its wait could end: the server's deadline timer
// starts after sent, so an answer at the deadline comes at sent+wait or
// later. It orders two events; it is not a latency bound.
func answeredBefore(r timedStatus, sent time.Time, wait time.Duration) bool {
	return r.at.Before(sent.Add(wait))
}

// pendingOrder places one order of user and returns its request id.
func (h *harness) pendingOrder(user, item int64) string {
	h.t.Helper()
	r := h.order(user, item, 1, "")
	if r.Code != http.StatusAccepted {
		h.t.Fatalf("order: %d %s", r.Code, r.Body)
	}
	return r.json(h.t)["request_id"].(string)
}

type timedStatus struct {
	code   int
	status string
	at     time.Time
	body   string
}

// poll GETs rid's status as user with ?wait=wait (ctx may cancel it).
func (h *harness) poll(ctx context.Context, user int64, rid, wait string) timedStatus {
	path := "/api/v1/orders/" + rid
	if wait != "" {
		path += "?wait=" + wait
	}
	req := httptest.NewRequest(http.MethodGet, path, nil).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+h.token(user, ""))
	rec := httptest.NewRecorder()
	h.srv.Echo().ServeHTTP(rec, req)
	var v struct{ Status string }
	_ = json.Unmarshal(rec.Body.Bytes(), &v)
	return timedStatus{code: rec.Code, status: v.Status, at: time.Now(), body: rec.Body.String()}
}

// TestWaitDeadline: a request that never settles is answered PENDING at the
// end of its wait, not before, and not held to the 30 s cap.
func TestWaitDeadline(t *testing.T) {
	h := waitHarness(t, 100)
	item := h.newItem(10, 1)
	rid := h.pendingOrder(8, item)
	const wait = 800 * time.Millisecond
	start := time.Now()
	r := h.poll(context.Background(), 8, rid, "800ms")
	took := r.at.Sub(start)
	if r.code != 200 || r.status != orderstatus.Pending {
		t.Fatalf("got %d %s, want 200 PENDING", r.code, r.body)
	}
	if answeredBefore(r, start, wait) {
		t.Fatalf("answered after %v, before the %v deadline", took, wait)
	}
	// Only a guard against a hang (10 s, far below the 30 s cap): how soon
	// after the deadline is not asserted.
	if took > 10*time.Second {
		t.Fatalf("answered after %v, want at the %v deadline", took, wait)
	}
}

// TestWaitOtherUsersRequest: waiting does not change the owner check: another
// user's request is a 404 at once, and an invalid wait a 400.
func TestWaitOtherUsersRequest(t *testing.T) {
	h := waitHarness(t, 100)
	item := h.newItem(10, 1)
	rid := h.pendingOrder(21, item)
	start := time.Now()
	r := h.poll(context.Background(), 22, rid, "5s")
	if r.code != 404 || !answeredBefore(r, start, 5*time.Second) {
		t.Fatalf("other user's poll: %d %s after %v, want 404 at once, not at its 5s deadline", r.code, r.body, r.at.Sub(start))
	}
	for _, bad := range []string{"abc", "-1s", "1m", "1.5s", "10", "1234567s"} {
		if r := h.poll(context.Background(), 21, rid, bad); r.code != 400 || !json.Valid([]byte(r.body)) {
			t.Fatalf("wait=%s: %d %s, want 400 invalid_wait", bad, r.code, r.body)
		} else if m := (resp{Body: []byte(r.body)}).json(t); m["error"] != "invalid_wait" {
			t.Fatalf("wait=%s: %s, want invalid_wait", bad, r.body)
		}
	}
	// Sent but empty is not "no wait": the pattern refuses it (the contract
	// fuzzer found ?wait= answered 200).
	if r := h.do(http.MethodGet, "/api/v1/orders/"+rid+"?wait=", "", h.as(21)); r.Code != 400 || r.json(t)["error"] != "invalid_wait" {
		t.Fatalf("wait= (empty): %d %s, want 400 invalid_wait", r.Code, r.Body)
	}
	// Above the cap is cut to it, never refused; 0 is a plain poll.
	if r := h.poll(context.Background(), 21, rid, "0s"); r.code != 200 || r.status != orderstatus.Pending {
		t.Fatalf("wait=0s: %d %s", r.code, r.body)
	}
}
