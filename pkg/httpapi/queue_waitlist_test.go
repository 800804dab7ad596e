package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// stateWithin polls user's ticket (no long poll: a sold-out ticket answers
// at once) until it is in state want.
func (h *harness) stateWithin(user, item int64, ticket, want string, within time.Duration) api.TicketStatus {
	h.t.Helper()
	var v api.TicketStatus
	testenv.Eventually(h.t, within, 30*time.Millisecond, func() bool {
		var r resp
		if r, v = h.ticketStatusOf(user, item, ticket, ""); r.Code != http.StatusOK {
			h.t.Fatalf("ticket of %d: %d %s", user, r.Code, r.Body)
		}
		return v.State == want
	}, "ticket of %d: %v, want %s", user, lazy(func() string { return fmt.Sprintf("%+v", v) }), want)
	return v
}

// offerWaiters polls until n polls of item's sold-out tickets wait on its
// offer reader, and the reader has read once: a change from now on wakes
// them.
func (h *harness) offerWaiters(item int64, n int) {
	h.t.Helper()
	testenv.Eventually(h.t, 10*time.Second, 5*time.Millisecond, func() bool {
		_, offer, read := h.srv.room.Waiting(item)
		return offer == n && read
	}, "%d polls waiting on item %d's offers", n, item)
}

// polledTicket is a ticket's long poll answer and when it came.
type polledTicket struct {
	v  api.TicketStatus
	at time.Time
}

// longPollTicket sends user's long poll of ticket, waiting up to wait, in
// the background, and returns where its answer will come.
func (h *harness) longPollTicket(user, item int64, ticket string, wait time.Duration) <-chan polledTicket {
	done := make(chan polledTicket, 1)
	go func() {
		_, v := h.ticketStatusOf(user, item, ticket, wait.String())
		done <- polledTicket{v, time.Now()}
	}()
	return done
}

// orderAdmitted waits for user's ticket to be admitted, orders one unit
// with its grant, requires a 202 and returns the order's request id.
func (h *harness) orderAdmitted(user, item int64, ticket string) string {
	h.t.Helper()
	g := h.admitted(user, item, ticket, 5*time.Second)
	r := h.orderWith(user, item, g.AdmissionGrant)
	if r.Code != http.StatusAccepted {
		h.t.Fatalf("order of %d: %d %s", user, r.Code, r.Body)
	}
	return decode[accepted](h.t, r).RequestID
}

// TestWaitlistOfferByTicket: once a queued item sold out, a unit released
// by the reaper (its Redis restore, called here as the reaper calls it) is
// offered to the next ticket in line whose buyer holds nothing: that ticket
// alone reads "offered" with an offer grant until the claim window ends,
// the buyer's order claims the unit (202) once, and nobody else can use
// the grant; an offer left unclaimed lapses (403 offer_gone) and, with
// nobody left in line, the unit goes back to the stock, where an admitted
// ticket orders it as usual.
func TestWaitlistOfferByTicket(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.StatusWaitMax = 10 * time.Second }})
	h.runGateWith(700 * time.Millisecond)
	ctx := context.Background()
	now := time.Now()
	item, other := testenv.ItemID(), testenv.ItemID()
	h.putRatedItem(item, 2, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour), 1000)
	h.putRatedItem(other, 2, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour), 1000)
	// Tickets after the start queue in arrival order: 11, 12, 13, 14.
	tickets := map[int64]string{}
	for _, u := range []int64{11, 12, 13, 14} {
		_, tk := h.take(u, item)
		tickets[u] = tk.Ticket
	}
	rids := map[int64]string{}
	for _, u := range []int64{11, 12} {
		rids[u] = h.orderAdmitted(u, item, tickets[u])
	}
	h.stateWithin(13, item, tickets[13], api.TicketSoldOut, 2*time.Second)

	// 13 long-polls its sold-out ticket: the offer answers it.
	const wait = 10 * time.Second
	sent := time.Now()
	longPoll := h.longPollTicket(13, item, tickets[13], wait)
	h.offerWaiters(item, 1)
	st := stock.New(h.rdb)
	released := time.Now()
	if res, err := st.Restore(ctx, item, 0, rids[11], 1); err != nil || res != stock.RestoreWaitlisted {
		t.Fatalf("restore of 11's unit: %v %v, want held for the waitlist", res, err)
	}
	lp := <-longPoll
	if lp.v.State != api.TicketOffered || !lp.at.Before(sent.Add(wait)) {
		t.Fatalf("13's long poll: %+v %s after the release, want offered, woken by the offer before its %s deadline", lp.v, lp.at.Sub(released), wait)
	}
	t.Logf("the long poll of the next ticket in line answered offered %s after the release", lp.at.Sub(released).Round(time.Millisecond))
	offer := h.stateWithin(13, item, tickets[13], api.TicketOffered, 2*time.Second)
	if offer.AdmissionGrant == "" || offer.GrantExpiresAt == nil || offer.Position == nil || *offer.Position != 3 {
		t.Fatalf("offered ticket: %+v", offer)
	}
	if _, v := h.ticketStatusOf(14, item, tickets[14], ""); v.State != api.TicketSoldOut {
		t.Fatalf("the next ticket: %+v, want sold_out (one unit, one offer)", v)
	}
	for name, c := range map[string]struct {
		user, item int64
		code       int
		err        string
	}{
		"another buyer":  {14, item, http.StatusForbidden, "admission_invalid"},
		"another item":   {13, other, http.StatusForbidden, "admission_invalid"},
		"a holder's try": {11, item, http.StatusForbidden, "admission_invalid"},
	} {
		r := h.orderWith(c.user, c.item, offer.AdmissionGrant)
		if r.Code != c.code || r.json(t)["error"] != c.err {
			t.Errorf("%s with 13's offer grant: %d %s, want %d %s", name, r.Code, r.Body, c.code, c.err)
		}
	}
	two := fmt.Sprintf(`{"item_id":%d,"qty":2,"admission_grant":%q}`, item, offer.AdmissionGrant)
	if r := h.do(http.MethodPost, "/api/v1/orders", two, h.as(13)); r.Code != http.StatusBadRequest || !strings.Contains(string(r.Body), "offer is one unit") {
		t.Errorf("claim of 2 units: %d %s, want 400 invalid_qty (an offer is one unit)", r.Code, r.Body)
	}
	h.orderOnce(13, item, offer.AdmissionGrant, "claim")
	if left := h.redisStock(item); left != 0 {
		t.Fatalf("redis stock %d after the claim, want 0: the claim took the offer's unit", left)
	}

	// 14 is offered the next unit and lets it lapse; nobody is left in
	// line, so it goes back to the stock.
	if res, err := st.Restore(ctx, item, 0, rids[12], 1); err != nil || res != stock.RestoreWaitlisted {
		t.Fatalf("restore of 12's unit: %v %v", res, err)
	}
	lapsing := h.stateWithin(14, item, tickets[14], api.TicketOffered, 5*time.Second)
	// The claim window ends: the gate takes the unit back to the stock,
	// which admits 14's ticket again.
	back := h.stateWithin(14, item, tickets[14], api.TicketAdmitted, 10*time.Second)
	if r := h.orderWith(14, item, lapsing.AdmissionGrant); r.Code != http.StatusForbidden || r.json(t)["error"] != "offer_gone" {
		t.Errorf("lapsed offer: %d %s, want 403 offer_gone", r.Code, r.Body)
	}
	if r := h.orderWith(14, item, back.AdmissionGrant); r.Code != http.StatusAccepted {
		t.Fatalf("order from the stock the unit went back to: %d %s", r.Code, r.Body)
	}
	w, err := waitroom.NewStore(st).ReadWaitlist(ctx, item)
	if err != nil || w.In != 2 || w.Claimed != 1 || w.Lapsed != 1 || w.Returned != 1 || w.Held() != 0 {
		t.Fatalf("waitlist: %+v %v, want 2 in: 1 claimed, 1 lapsed and returned", w, err)
	}
	r := h.do(http.MethodGet, fmt.Sprintf("/api/v1/admin/items/%d/queue", item), "", h.admin())
	var q api.AdminQueue
	if err := json.Unmarshal(r.Body, &q); r.Code != http.StatusOK || err != nil {
		t.Fatalf("admin queue: %d %s %v", r.Code, r.Body, err)
	}
	if want := (audit.Waitlist{In: 2, Offered: 2, Claimed: 1, Lapsed: 1, Returned: 1, Cursor: 4}); q.Waitlist != want {
		t.Fatalf("admin queue's waitlist: %+v, want %+v", q.Waitlist, want)
	}
}

// TestSoldOutTicketToldOfARestock: a long poll of a sold-out ticket answers
// when the item has stock again (an operator's restock), with the ticket's
// state then, instead of at the end of its wait: a buyer told sold_out is
// told when units come back. Before the poll waited on sold-out tickets it
// answered sold_out at once and the buyer was never told.
func TestSoldOutTicketToldOfARestock(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) { in.StatusWaitMax = 10 * time.Second }})
	h.runGate()
	now := time.Now()
	item := testenv.ItemID()
	h.putRatedItem(item, 1, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour), 1000)
	_, first := h.take(21, item)
	_, second := h.take(22, item)
	g := h.admitted(21, item, first.Ticket, 5*time.Second)
	if r := h.orderWith(21, item, g.AdmissionGrant); r.Code != http.StatusAccepted {
		t.Fatalf("order: %d %s", r.Code, r.Body)
	}
	h.stateWithin(22, item, second.Ticket, api.TicketSoldOut, 2*time.Second)
	const wait = 8 * time.Second
	sent := time.Now()
	done := h.longPollTicket(22, item, second.Ticket, wait)
	h.offerWaiters(item, 1)
	restocked := time.Now()
	if r := h.changeStock(item, 1, "restock-"+testenv.Suffix()); r.Code != http.StatusOK {
		t.Fatalf("restock: %d %s", r.Code, r.Body)
	}
	p := <-done
	if p.v.State != api.TicketAdmitted || p.v.AdmissionGrant == "" || !p.at.Before(sent.Add(wait)) {
		t.Fatalf("the sold-out ticket's long poll: %+v %s after the restock, want admitted, woken by the restock before its %s deadline", p.v, p.at.Sub(restocked), wait)
	}
	if r := h.orderWith(22, item, p.v.AdmissionGrant); r.Code != http.StatusAccepted {
		t.Fatalf("order after the restock: %d %s", r.Code, r.Body)
	}
}

// TestWaitlistFollowsTheShuffledOrder: with tickets taken before the start
// (shuffled by the seed), the gate offers a released unit to the first
// ticket of the drawn order whose buyer holds nothing, the position its
// own ticket reads: the gate and the ingress serve one line.
func TestWaitlistFollowsTheShuffledOrder(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	h.runGateWith(time.Minute)
	now := time.Now()
	item := testenv.ItemID()
	starts := now.Add(1500 * time.Millisecond)
	h.putRatedItem(item, 2, now.Add(-time.Minute), starts, now.Add(time.Hour), 1000)
	tickets := map[int64]string{}
	for u := int64(31); u <= 38; u++ {
		_, tk := h.take(u, item)
		tickets[u] = tk.Ticket
	}
	// The sale starts: the tickets learn their positions in the drawn
	// order.
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		_, v := h.ticketStatusOf(31, item, tickets[31], "")
		return v.Position != nil
	}, "no position after the start (%s)", starts)
	byPos := map[int64]int64{}
	for u, tk := range tickets {
		_, v := h.ticketStatusOf(u, item, tk, "")
		if v.Position == nil {
			t.Fatalf("ticket of %d after the start: %+v", u, v)
		}
		byPos[*v.Position] = u
	}
	var rid string
	for _, pos := range []int64{1, 2} {
		u := byPos[pos]
		rid = h.orderAdmitted(u, item, tickets[u])
	}
	h.stateWithin(byPos[3], item, tickets[byPos[3]], api.TicketSoldOut, 2*time.Second)
	if res, err := stock.New(h.rdb).Restore(context.Background(), item, 0, rid, 1); err != nil || res != stock.RestoreWaitlisted {
		t.Fatalf("restore: %v %v", res, err)
	}
	v := h.stateWithin(byPos[3], item, tickets[byPos[3]], api.TicketOffered, 2*time.Second)
	if *v.Position != 3 {
		t.Fatalf("offered ticket at position %d, want 3", *v.Position)
	}
	for pos := int64(4); pos <= 8; pos++ {
		if _, o := h.ticketStatusOf(byPos[pos], item, tickets[byPos[pos]], ""); o.State != api.TicketSoldOut {
			t.Errorf("position %d: %s, want sold_out (the unit is offered to position 3)", pos, o.State)
		}
	}
}
