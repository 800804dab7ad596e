package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/gate"
	"github.com/flashsale-dev/flashsale/pkg/grant"
)

// runGate runs a waiting-room gate on the harness' stores, as the reaper
// does, under a lease of the test's own, until the test ends.
func (h *harness) runGate() { h.runGateWith(0) }

// runGateWith is runGate with the waitlist's claim window (0: the default).
func (h *harness) runGateWith(claimWindow time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	g := gate.New(gate.Config{Interval: 20 * time.Millisecond, LeaseKey: "fs:test:gate:" + testenv.Suffix() + h.t.Name(), ClaimWindow: claimWindow},
		h.db, h.rdb, gate.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-done })
}

// putRatedItem is putQueuedItem with a queue_rate.
func (h *harness) putRatedItem(id, stockQty int64, opens, starts, ends time.Time, rate int) {
	h.t.Helper()
	body := fmt.Sprintf(`{"name":"rated %d","price_cents":1,"stock":%d,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true,"queue_opens_at":%q,"queue_rate":%d}`,
		id, stockQty, starts.UTC().Format(time.RFC3339Nano), ends.UTC().Format(time.RFC3339Nano), opens.UTC().Format(time.RFC3339Nano), rate)
	if r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), body, h.admin()); r.Code != http.StatusOK {
		h.t.Fatalf("put rated item: %d %s", r.Code, r.Body)
	}
}

// orderWith is POST /api/v1/orders of one unit with an admission grant.
func (h *harness) orderWith(user, item int64, g string) resp {
	return h.do(http.MethodPost, "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":%q}`, item, g), h.as(user))
}

// admitted long-polls user's ticket until it is admitted and returns it.
func (h *harness) admitted(user, item int64, ticket string, within time.Duration) ticketStatus {
	h.t.Helper()
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		r, v := h.ticketStatusOf(user, item, ticket, "2s")
		if r.Code != http.StatusOK {
			h.t.Fatalf("ticket of %d: %d %s", user, r.Code, r.Body)
		}
		if v.State == ticketAdmitted {
			return v
		}
		if v.State != ticketWaiting {
			h.t.Fatalf("ticket of %d: %+v, want waiting then admitted", user, v)
		}
		time.Sleep(20 * time.Millisecond) // a harness without long polls answers at once
	}
	h.t.Fatalf("ticket of %d not admitted within %s", user, within)
	return ticketStatus{}
}

// TestQueuedItemRequiresAGrant: an order of an item with a waiting room is
// refused without a grant, with a forged one, with another buyer's, another
// item's, or an expired one (403, nothing reserved); the buyer's own grant
// orders, once; an item without a queue ignores a grant.
func TestQueuedItemRequiresAGrant(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.QueueGrantTTL = time.Second }})
	h.runGate()
	now := time.Now()
	item, other := testenv.ItemID(), testenv.ItemID()
	h.putRatedItem(item, 10, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour), 1000)
	h.putRatedItem(other, 10, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour), 1000)
	_, tk := h.take(11, item)
	_, tk2 := h.take(11, other)
	_, tk3 := h.take(12, item)
	mine := h.admitted(11, item, tk.Ticket, 5*time.Second)
	otherItem := h.admitted(11, other, tk2.Ticket, 5*time.Second)
	theirs := h.admitted(12, item, tk3.Ticket, 5*time.Second)
	if mine.AdmissionGrant == "" || mine.GrantExpiresAt == nil || mine.ServingPosition == nil || *mine.ServingPosition < *mine.Position {
		t.Fatalf("admitted ticket: %+v", mine)
	}

	refused := []struct {
		name, body, code string
	}{
		{"no grant", fmt.Sprintf(`{"item_id":%d,"qty":1}`, item), "admission_required"},
		{"forged", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":"g1.%d.11.99999999999999.AAAA"}`, item, item), "admission_invalid"},
		{"empty", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":""}`, item), "admission_invalid"},
		{"another buyer's", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":%q}`, item, theirs.AdmissionGrant), "admission_invalid"},
		{"another item's", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":%q}`, item, otherItem.AdmissionGrant), "admission_invalid"},
		{"too long", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":%q}`, item, strings.Repeat("g", grant.MaxLen+1)), "admission_invalid"},
	}
	for _, c := range refused {
		r := h.do(http.MethodPost, "/api/v1/orders", c.body, h.as(11))
		if r.Code != http.StatusForbidden || r.json(t)["error"] != c.code {
			t.Errorf("%s: %d %s, want 403 %s", c.name, r.Code, r.Body, c.code)
		}
	}
	time.Sleep(time.Until(*mine.GrantExpiresAt) + 10*time.Millisecond)
	if r := h.orderWith(11, item, mine.AdmissionGrant); r.Code != http.StatusForbidden || r.json(t)["error"] != "admission_expired" {
		t.Errorf("expired grant: %d %s, want 403 admission_expired", r.Code, r.Body)
	}
	if left := h.redisStock(item); left != 10 {
		t.Fatalf("refused orders reserved: redis stock %d, want 10", left)
	}
	fresh := h.admitted(11, item, tk.Ticket, time.Second)
	if r := h.orderWith(11, item, fresh.AdmissionGrant); r.Code != http.StatusAccepted {
		t.Fatalf("own fresh grant: %d %s, want 202", r.Code, r.Body)
	}
	if r := h.orderWith(11, item, fresh.AdmissionGrant); r.Code != http.StatusConflict {
		t.Errorf("own grant again: %d %s, want 409 already_purchased", r.Code, r.Body)
	}
	if left := h.redisStock(item); left != 9 {
		t.Errorf("redis stock %d, want 9", left)
	}

	plain := testenv.ItemID()
	h.putItem(plain, 5, 1)
	if r := h.orderWith(13, plain, "whatever"); r.Code != http.StatusAccepted {
		t.Errorf("item without a queue, with a grant: %d %s, want 202 (ignored)", r.Code, r.Body)
	}
}

// TestGateAdmitsAtTheRate: with a queue_rate of 20 a second, 30 tickets
// taken before the start are admitted over about 1.5 s, in the serving
// order, and a waiting ticket's estimate is within reach of when it is
// admitted; a long poll wakes when the gate reaches it.
func TestGateAdmitsAtTheRate(t *testing.T) {
	h := waitHarness(t, 100)
	h.runGate()
	now := time.Now()
	item := testenv.ItemID()
	starts := now.Add(1500 * time.Millisecond)
	h.putRatedItem(item, 100, now.Add(-time.Minute), starts, now.Add(time.Hour), 20)
	const n = 30
	tickets := make([]ticketView, n)
	for i := range n {
		_, tickets[i] = h.take(int64(300+i), item)
	}
	time.Sleep(time.Until(starts) + 50*time.Millisecond)
	var last ticketStatus
	var lastUser int64
	for i, tk := range tickets {
		_, v := h.ticketStatusOf(int64(300+i), item, tk.Ticket, "")
		if v.Position == nil || v.ServingPosition == nil {
			t.Fatalf("after the start: %+v", v)
		}
		if *v.Position == n {
			last, lastUser = v, int64(300+i)
		}
	}
	if last.State != ticketWaiting || last.EstimatedWaitMs == nil || *last.EstimatedWaitMs < 1000 {
		t.Fatalf("the last position right after the start: %+v, want waiting about 1.5 s", last)
	}
	est := time.Duration(*last.EstimatedWaitMs) * time.Millisecond
	asked := time.Now()
	v := h.admitted(lastUser, item, last.Ticket, 10*time.Second)
	took := time.Since(asked)
	if *v.ServingPosition < n {
		t.Fatalf("admitted at serving %d < position %d", *v.ServingPosition, n)
	}
	// Passes every 20 ms, a poll's own latency: a generous bound, as the
	// machine is shared; the bench measures the estimate's error.
	if d := took - est; d < -300*time.Millisecond || d > 700*time.Millisecond {
		t.Errorf("admitted %s after an estimate of %s", took, est)
	}
	if took < 700*time.Millisecond {
		t.Errorf("30 tickets at 20 a second admitted in %s: the rate did not pace them", took)
	}
}
