//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// queueTicket is what the test reads of a ticket's status.
type queueTicket struct {
	State           string `json:"state"`
	Position        *int64 `json:"position"`
	ServingPosition *int64 `json:"serving_position"`
	AdmissionGrant  string `json:"admission_grant"`
}

// takeTicket takes a ticket of the queue at qpath as bearer, once: its id,
// or "" when the answer was not a ticket (the caller retries).
func (p *pipeline) takeTicket(ctx context.Context, qpath, bearer string) string {
	code, b := p.call(ctx, http.MethodPost, qpath, bearer, nil, nil)
	var v struct {
		Ticket string `json:"ticket"`
	}
	if (code == http.StatusCreated || code == http.StatusOK) && json.Unmarshal(b, &v) == nil {
		return v.Ticket
	}
	return ""
}

// putQueuedItem creates p's item through the admin API as a queued sale of
// units, its queue open since a minute ago, admitting rate a second once
// the sale starts in 4 s, and returns that start.
//
// Its shuffle window is 2 s in rounds of 1 s, not the default one round of
// 10 s: round 0 holds the tickets taken before the start with those of its
// first slice, so the gate admits no one until it closes. With the default,
// TestQueueGateReaperKilled's kills (at serving positions) came 8 s later
// and each waitlist hand-off test's first released unit 14 s after the
// start, not 5 s. Two rounds still close before the faults.
func (p *pipeline) putQueuedItem(ctx context.Context, name string, units int, rate int) time.Time {
	p.t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	starts := now.Add(4 * time.Second)
	body := map[string]any{"name": name, "price_cents": 1999, "stock": units, "per_user_limit": 1,
		"starts_at": starts, "ends_at": now.Add(2 * time.Hour), "queue": true, "queue_opens_at": now.Add(-time.Minute), "queue_rate": rate,
		"queue_shuffle_window_ms": 2000, "queue_round_ms": 1000}
	if code, b := p.call(ctx, http.MethodPut, p.itemPath(""), p.admin, body, nil); code != http.StatusOK {
		p.t.Fatalf("create queued item: %d %s", code, b)
	}
	return starts
}

// TestQueueGateReaperKilled: buyers take tickets of a queued item before
// its start and order only with the grant their admitted ticket shows, at a
// rate of 40 a second; bots order without grants all along. Mid-sale the
// reaper replicas, which hold the gate, are SIGKILLed in turn and
// restarted. Admission goes on after every kill (the other replica takes
// the gate over), no bot's order is ever reserved (I8: Redis refuses an
// order of a queued item without a checked grant), the winners are the
// front of the serving order, and at quiescence I1-I7 hold in MySQL, Redis
// and the audit endpoint.
func TestQueueGateReaperKilled(t *testing.T) {
	start := time.Now()
	cfg := defaultSettings()
	cfg.Units, cfg.Reapers, cfg.PaymentWindow = 60, 2, 30*time.Second
	p := newPipeline(t, cfg)
	p.startProcesses()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	starts := p.putQueuedItem(ctx, "queued fault item", cfg.Units, 40)
	qpath := fmt.Sprintf("/api/v1/items/%d/queue", p.itemID)

	const humans, bots = 150, 20
	var (
		mu       sync.Mutex
		winners  = map[int64]int64{}  // user -> position
		ended    = map[int64]string{} // user -> how a buyer without a unit stopped
		rids     = map[int64]string{}
		botWon   atomic.Int64
		botTries atomic.Int64
	)
	var wg sync.WaitGroup
	for i := range humans {
		user := int64(10_000 + i)
		wg.Go(func() {
			bearer := p.bearer(user)
			// A retry (no ticket yet, an unread ticket, a 503) waits for
			// the next tick, every 100 ms, or for the end of ctx.
			retry := time.NewTicker(100 * time.Millisecond)
			defer retry.Stop()
			again := func() {
				select {
				case <-ctx.Done():
				case <-retry.C:
				}
			}
			var ticket string
			for ticket == "" && ctx.Err() == nil {
				if ticket = p.takeTicket(ctx, qpath, bearer); ticket == "" {
					again()
				}
			}
			for ctx.Err() == nil {
				code, b := p.call(ctx, http.MethodGet, qpath+"/"+ticket+"?wait=5s", bearer, nil, nil)
				var v queueTicket
				if code != http.StatusOK || json.Unmarshal(b, &v) != nil {
					again()
					continue
				}
				if v.State == "sold_out" || v.State == "expired" {
					mu.Lock()
					ended[user] = fmt.Sprintf("ticket %s at position %v", v.State, testenv.Deref(v.Position))
					mu.Unlock()
					return
				}
				if v.State != "admitted" {
					continue
				}
				code, b = p.call(ctx, http.MethodPost, "/api/v1/orders", bearer, map[string]any{"item_id": p.itemID, "qty": 1, "admission_grant": v.AdmissionGrant}, nil)
				var a struct {
					RequestID string `json:"request_id"`
				}
				switch {
				case code == http.StatusAccepted || code == http.StatusConflict:
					if json.Unmarshal(b, &a) == nil && a.RequestID != "" {
						mu.Lock()
						winners[user], rids[user] = *v.Position, a.RequestID
						mu.Unlock()
						p.payWhenUnpaid(ctx, user, a.RequestID)
					}
					return
				case code == http.StatusGone:
					mu.Lock()
					ended[user] = fmt.Sprintf("order 410 at position %d: %s", *v.Position, b)
					mu.Unlock()
					return
				case code == http.StatusForbidden:
					t.Errorf("user %d: order with its own fresh grant refused: %s", user, b)
					return
				}
				again() // 503 or no answer: read the ticket again, retry
			}
		})
	}
	botsDone := make(chan struct{})
	var botWG sync.WaitGroup
	for i := range bots {
		user := int64(20_000 + i)
		botWG.Go(func() {
			bearer := p.bearer(user)
			for {
				select {
				case <-botsDone:
					return
				case <-time.After(50 * time.Millisecond):
				}
				code, b := p.call(ctx, http.MethodPost, "/api/v1/orders", bearer, map[string]any{"item_id": p.itemID, "qty": 1}, nil)
				botTries.Add(1)
				if code == http.StatusAccepted {
					botWon.Add(1)
					t.Errorf("bot %d: an order without a grant was accepted: %s", user, b)
				}
			}
		})
	}

	serving := func() int64 {
		code, b := p.call(ctx, http.MethodGet, p.itemPath("/queue"), p.admin, nil, nil)
		var v struct {
			Serving int64 `json:"serving_position"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &v) != nil {
			return -1
		}
		return v.Serving
	}
	// The first kill lands mid-sale: once the gate has admitted half a
	// second's worth (20 at 40 a second) past the start.
	testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool { return serving() >= 20 },
		"the gate did not admit 20 buyers after the start at %v (serving %d)", starts, lazy(func() string { return fmt.Sprint(serving()) }))
	for i, r := range p.reapers {
		before := serving()
		r.kill()
		// Whichever replica held the gate, the survivor holds it within its
		// 1 s lease and the serving position moves on.
		testenv.Eventually(t, 5*time.Second, 50*time.Millisecond, func() bool { return serving() > before+10 },
			"reaper-%d SIGKILLed at serving %d: admissions did not go on", i, before)
		t.Logf("reaper-%d SIGKILLed at serving %d; serving %d after", i, before, serving())
		r.start()
	}
	wg.Wait()
	close(botsDone)
	botWG.Wait()
	if ctx.Err() != nil {
		t.Fatalf("buyers did not finish: %v", ctx.Err())
	}
	t.Logf("%d humans won %d units; bots tried %d orders without grants, %d accepted", humans, len(winners), botTries.Load(), botWon.Load())
	if len(winners) != cfg.Units {
		t.Errorf("%d winners for %d units", len(winners), cfg.Units)
	}
	// Everyone before a winner was admitted first and ordered at once: the
	// winners are the front of the order. A new holder admits up to a
	// second's worth at once (the gate's catch-up: 40 here), and buyers
	// admitted together race for what is left, so the bound is the units,
	// a second of rate and a margin for slow polls.
	const bound = 60 + 40 + 10
	var late int
	for user, pos := range winners {
		if pos > bound {
			late++
			t.Logf("user %d won at position %d", user, pos)
		}
	}
	if late > 0 {
		for user, how := range ended {
			t.Logf("user %d: %s", user, how)
		}
		t.Errorf("%d winners from beyond position %d of the serving order", late, bound)
	}
	rep := p.settle(fmt.Sprintf("reaper (gate holder) SIGKILL x%d while a queued item sells", len(p.reapers)), start)
	for user, rid := range rids {
		if st, ok := p.status(ctx, user, rid); !ok || st.Status != "PAID" {
			t.Errorf("user %d's order %s: %+v (read %v), want PAID", user, rid, st, ok)
		}
	}
	if rep.direct.Total != int64(cfg.Units) {
		t.Errorf("audit total %d, want %d", rep.direct.Total, cfg.Units)
	}
}

// payWhenUnpaid pays rid as user once it is UNPAID, within the window.
func (p *pipeline) payWhenUnpaid(ctx context.Context, user int64, rid string) {
	deadline := time.Now().Add(p.cfg.PaymentWindow)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline) && ctx.Err() == nil; <-tick.C {
		if st, ok := p.statusWait(ctx, user, rid, time.Second); ok && st.Status != "PENDING" {
			if st.Status != "UNPAID" {
				return
			}
			if code, _ := p.call(ctx, http.MethodPost, "/api/v1/orders/"+rid+"/pay", p.bearer(user), nil, nil); code != 0 && code < 500 {
				return
			}
		}
	}
}
