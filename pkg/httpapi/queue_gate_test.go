package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// runGate runs a waiting-room gate on the harness' stores, as the reaper
// does, under a lease of the test's own, until the test ends; it returns
// the gate's metrics.
func (h *harness) runGate() *waitroom.GateMetrics { return h.runGateWith(0) }

// runGateWith is runGate with the waitlist's claim window (0: the default).
func (h *harness) runGateWith(claimWindow time.Duration) *waitroom.GateMetrics {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := waitroom.NewGateMetrics(prometheus.NewRegistry())
	g := waitroom.NewGate(waitroom.GateConfig{Interval: 20 * time.Millisecond, LeaseKey: "fs:test:gate:" + testenv.Suffix() + h.t.Name(), ClaimWindow: claimWindow},
		h.db, h.rdb, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Run(ctx) }()
	h.t.Cleanup(func() { cancel(); <-done })
	return m
}

// putRatedItem is putQueuedItem with a queue_rate.
func (h *harness) putRatedItem(id, stockQty int64, opens, starts, ends time.Time, rate int) {
	h.t.Helper()
	body := fmt.Sprintf(`{"name":"rated %d","price_cents":1,"stock":%d,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"queue":true,"queue_opens_at":%q,"queue_rate":%d,"queue_shuffle_window_ms":0}`,
		id, stockQty, starts.UTC().Format(time.RFC3339Nano), ends.UTC().Format(time.RFC3339Nano), opens.UTC().Format(time.RFC3339Nano), rate)
	if r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), body, h.admin()); r.Code != http.StatusOK {
		h.t.Fatalf("put rated item: %d %s", r.Code, r.Body)
	}
}

// orderWith is POST /api/v1/orders of one unit with an admission grant.
func (h *harness) orderWith(user, item int64, g string) resp {
	return h.do(http.MethodPost, "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":%q}`, item, g), h.as(user))
}

// orderOnce orders one unit of item as user with grant (what names it in
// failures): accepted (202) the first time, 409 already_purchased the
// second.
func (h *harness) orderOnce(user, item int64, grant, what string) {
	h.t.Helper()
	if r := h.orderWith(user, item, grant); r.Code != http.StatusAccepted {
		h.t.Fatalf("%s: %d %s, want 202", what, r.Code, r.Body)
	}
	if r := h.orderWith(user, item, grant); r.Code != http.StatusConflict {
		h.t.Errorf("%s again: %d %s, want 409 already_purchased", what, r.Code, r.Body)
	}
}

// admitted long-polls user's ticket until it is admitted and returns it
// (every 20 ms at most: a harness without long polls answers at once).
func (h *harness) admitted(user, item int64, ticket string, within time.Duration) api.TicketStatus {
	h.t.Helper()
	var v api.TicketStatus
	testenv.Eventually(h.t, within, 20*time.Millisecond, func() bool {
		var r resp
		if r, v = h.ticketStatusOf(user, item, ticket, "2s"); r.Code != http.StatusOK {
			h.t.Fatalf("ticket of %d: %d %s", user, r.Code, r.Body)
		}
		if v.State != api.TicketAdmitted && v.State != api.TicketWaiting {
			h.t.Fatalf("ticket of %d: %+v, want waiting then admitted", user, v)
		}
		return v.State == api.TicketAdmitted
	}, "ticket of %d not admitted", user)
	return v
}

// TestQueuedItemRequiresAGrant: an order of an item with a waiting room is
// refused without a grant, with a forged one, with another buyer's, another
// item's, or an expired one (403, nothing reserved); the buyer's own grant
// orders, once; an item without a queue ignores a grant. The grants' clock
// is the test's: a grant expires by advancing it past its expiry.
func TestQueuedItemRequiresAGrant(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.QueueGrantTTL = time.Second }})
	clk := newTestClock()
	h.srv.room.WithGrantClock(clk.Now)
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
		{"too long", fmt.Sprintf(`{"item_id":%d,"qty":1,"admission_grant":%q}`, item, strings.Repeat("g", waitroom.GrantMaxLen+1)), "admission_invalid"},
	}
	for _, c := range refused {
		r := h.do(http.MethodPost, "/api/v1/orders", c.body, h.as(11))
		if r.Code != http.StatusForbidden || r.json(t)["error"] != c.code {
			t.Errorf("%s: %d %s, want 403 %s", c.name, r.Code, r.Body, c.code)
		}
	}
	clk.Step(mine.GrantExpiresAt.Sub(clk.Now())) // the grant's last instant has passed
	if r := h.orderWith(11, item, mine.AdmissionGrant); r.Code != http.StatusForbidden || r.json(t)["error"] != "admission_expired" {
		t.Errorf("expired grant: %d %s, want 403 admission_expired", r.Code, r.Body)
	}
	if left := h.redisStock(item); left != 10 {
		t.Fatalf("refused orders reserved: redis stock %d, want 10", left)
	}
	fresh := h.admitted(11, item, tk.Ticket, 5*time.Second)
	h.orderOnce(11, item, fresh.AdmissionGrant, "own fresh grant")
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
// taken before the start are admitted in steps, not at once: the gate goes
// through several serving positions on its way to the last. A waiting
// ticket's estimate is the rate's arithmetic from where the gate stands,
// and a long poll wakes when the gate reaches it. How close the estimate
// comes to the real wait is measured by the bench, not asserted here.
func TestGateAdmitsAtTheRate(t *testing.T) {
	h := waitHarness(t, 100)
	h.runGate()
	now := time.Now()
	item := testenv.ItemID()
	starts := now.Add(1500 * time.Millisecond)
	const rate = 20
	h.putRatedItem(item, 100, now.Add(-time.Minute), starts, now.Add(time.Hour), rate)
	const n = 30
	tickets := make([]api.Ticket, n)
	for i := range n {
		_, tickets[i] = h.take(int64(300+i), item)
	}
	// The sale starts: the tickets learn their positions in the drawn
	// order.
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		_, v := h.ticketStatusOf(300, item, tickets[0].Ticket, "")
		return v.Position != nil
	}, "no position after the start")
	var last api.TicketStatus
	var lastUser int64
	var lastTook time.Duration
	for i, tk := range tickets {
		sent := time.Now()
		_, v := h.ticketStatusOf(int64(300+i), item, tk.Ticket, "")
		if v.Position == nil || v.ServingPosition == nil {
			t.Fatalf("after the start: %+v", v)
		}
		if *v.Position == n {
			last, lastUser, lastTook = v, int64(300+i), time.Since(sent)
		}
	}
	if last.State != api.TicketWaiting || last.EstimatedWaitMs == nil || last.ServingPosition == nil {
		t.Fatalf("the last position right after the start: %+v, want waiting", last)
	}
	// The estimate counts from the read of the gate that the answer shows,
	// which the ingress made or shared at most an interval and a half
	// (100 ms readers here) before the request ended: the gate went on at
	// the rate meanwhile.
	togo := n - *last.ServingPosition
	gone := int64(math.Ceil(rate * (150*time.Millisecond + lastTook).Seconds()))
	hi, lo := waitroom.AdmitIn(togo, rate).Milliseconds(), waitroom.AdmitIn(togo-gone, rate).Milliseconds()
	if got := *last.EstimatedWaitMs; got > hi || got < lo {
		t.Errorf("estimate %d ms with the gate read at %d, want %d ms for %d positions at %d a second, less up to %d gone since the read (%d ms)",
			got, *last.ServingPosition, hi, togo, rate, gone, lo)
	}
	// The last ticket's long poll wakes when the gate reaches it: it
	// answers admitted before its deadline.
	const wait = 30 * time.Second
	sent := time.Now()
	done := h.longPollTicket(lastUser, item, last.Ticket, wait)
	// Meanwhile the gate goes through the serving positions, at the rate.
	seen := map[int64]bool{*last.ServingPosition: true}
	testenv.Eventually(t, 20*time.Second, 10*time.Millisecond, func() bool {
		g, err := waitroom.NewStore(h.st).ReadGate(context.Background(), item)
		if err != nil {
			t.Fatalf("read gate: %v", err)
		}
		seen[g.Serving] = true
		return g.Serving >= n
	}, "the gate did not reach position %d", n)
	if len(seen) < 4 {
		t.Errorf("the gate went to %d through %d serving positions only (%v): the rate did not pace the admissions", n, len(seen), seen)
	}
	p := <-done
	if p.v.State != api.TicketAdmitted || p.v.ServingPosition == nil || *p.v.ServingPosition < n || !p.at.Before(sent.Add(wait)) {
		t.Fatalf("the last ticket's long poll: %+v %s after it was sent, want admitted at serving %d, before its %s deadline",
			p.v, p.at.Sub(sent), n, wait)
	}
}
