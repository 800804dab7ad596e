package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
)

// resaleRoom is a sold-out queued item whose waitlist offers released
// units, as the ingress shows them (a unit test of the players' resale,
// bots_queue_resale.go; the real hand-off is pkg/httpapi's
// TestWaitlistOfferByTicket): every ticket reads sold_out until the room
// puts an offer on it, then "offered" with the offer grant "w:<buyer>:<n>"
// until its expiry; a long poll answers when an offer comes (the room
// notes who waits on one and who was shown an offer, for the test to act
// on what the players did rather than on guessed pauses). A claim with
// the offer grant is 202 once (then 409), 403 offer_gone when the offer is
// gone (or for a buyer in goneOnce, once: the room drops that offer, as
// when the claim window ended as the claim was sent). An order without a
// grant is 410 sold_out. Every 202's order reads UNPAID and can be paid.
type resaleRoom struct {
	mu       sync.Mutex
	offers   map[string]time.Time // buyer -> the expiry of the offer on its ticket
	n        map[string]int       // buyer -> offers made
	goneOnce map[string]bool
	// stale buyers' tickets read admitted (with a grant "g:<buyer>" whose
	// order is 410 sold_out) until their first long poll, as the ingress's
	// reads up to 150 ms old do just after the sell-out.
	stale   map[string]bool
	claimed map[string]bool
	paid    map[string]bool
	lapsed  int
	claims  []string // "<buyer> <answer>" of every order with a grant
	// changed is closed (and replaced) at every offer, to wake the long
	// polls; waiting counts buyer's long polls waiting for an offer and
	// shown the answers that showed it one.
	changed chan struct{}
	waiting map[string]int
	shown   map[string]int
}

func newResaleRoom() *resaleRoom {
	return &resaleRoom{offers: map[string]time.Time{}, n: map[string]int{}, goneOnce: map[string]bool{}, stale: map[string]bool{}, claimed: map[string]bool{}, paid: map[string]bool{},
		changed: make(chan struct{}), waiting: map[string]int{}, shown: map[string]int{}}
}

// offer puts an offer of window on buyer's ticket.
func (f *resaleRoom) offer(buyer string, window time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offers[buyer] = time.Now().Add(window)
	f.n[buyer]++
	close(f.changed)
	f.changed = make(chan struct{})
}

// lapse ends buyer's unclaimed offer's claim window now and takes the
// offer back; true if there was one.
func (f *resaleRoom) lapse(buyer string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.offers[buyer]; !ok {
		return false
	}
	delete(f.offers, buyer)
	f.lapsed++
	return true
}

// offered is buyer's live offer's grant and expiry.
func (f *resaleRoom) offered(buyer string) (string, time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.offeredLocked(buyer)
}

func (f *resaleRoom) offeredLocked(buyer string) (string, time.Time, bool) {
	exp, ok := f.offers[buyer]
	if !ok || !time.Now().Before(exp) {
		return "", time.Time{}, false
	}
	return fmt.Sprintf("w:%s:%d", buyer, f.n[buyer]), exp, true
}

// longPoll waits up to wait for buyer's live offer (counts it shown), or
// for ctx's end; false without an offer. A read (wait 0) answers at once.
func (f *resaleRoom) longPoll(ctx context.Context, buyer string, wait time.Duration) (string, time.Time, bool) {
	until := time.Now().Add(wait)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	if wait > 0 {
		f.waiting[buyer]++
		defer func() { f.waiting[buyer]-- }()
	}
	for {
		if g, exp, ok := f.offeredLocked(buyer); ok {
			f.shown[buyer]++
			return g, exp, true
		}
		if ctx.Err() != nil || !time.Now().Before(until) {
			return "", time.Time{}, false
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
		}
		f.mu.Lock()
	}
}

// state reads the room under its lock.
func (f *resaleRoom) state(read func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	read()
}

func (f *resaleRoom) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	buyer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/items/1/queue":
		writeJSON(w, http.StatusOK, takenTicket{Ticket: "t-" + buyer, Arrival: 1, TakenAt: time.Now().UTC()})
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/items/1/queue/t-"+buyer:
		wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
		pos := int64(1)
		f.mu.Lock()
		stale := f.stale[buyer]
		if wait > 0 {
			delete(f.stale, buyer)
		}
		f.mu.Unlock()
		if stale && wait == 0 {
			writeJSON(w, http.StatusOK, ticketState{Ticket: "t-" + buyer, State: ticketAdmitted, Position: &pos, AdmissionGrant: "g:" + buyer, GrantExpiresAt: time.Now().Add(time.Minute).UTC()})
			return
		}
		if g, exp, ok := f.longPoll(r.Context(), buyer, wait); ok {
			writeJSON(w, http.StatusOK, ticketState{Ticket: "t-" + buyer, State: ticketOffered, Position: &pos, AdmissionGrant: g, GrantExpiresAt: exp.UTC()})
			return
		}
		writeJSON(w, http.StatusOK, ticketState{Ticket: "t-" + buyer, State: ticketSoldOut, Position: &pos})
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/orders":
		var b struct {
			Grant *string `json:"admission_grant"`
		}
		_ = json.NewDecoder(r.Body).Decode(&b)
		if b.Grant == nil || strings.HasPrefix(*b.Grant, "g:") {
			writeErr(w, http.StatusGone, "sold_out")
			return
		}
		g, _, live := f.offered(buyer)
		f.mu.Lock()
		defer f.mu.Unlock()
		answer := func(code int, e string) {
			f.claims = append(f.claims, buyer+" "+strconv.Itoa(code))
			if code == http.StatusAccepted {
				writeJSON(w, code, map[string]string{"request_id": "r-" + buyer, "status": "PENDING"})
				return
			}
			writeErr(w, code, e)
		}
		switch {
		case f.claimed[buyer]:
			answer(http.StatusConflict, "already_purchased")
		case f.goneOnce[buyer]:
			delete(f.goneOnce, buyer)
			delete(f.offers, buyer)
			answer(http.StatusForbidden, "offer_gone")
		case !live || *b.Grant != g:
			answer(http.StatusForbidden, "offer_gone")
		default:
			f.claimed[buyer] = true
			delete(f.offers, buyer)
			answer(http.StatusAccepted, "")
		}
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/orders/r-"+buyer:
		st := "UNPAID"
		f.mu.Lock()
		if f.paid[buyer] {
			st = "PAID"
		}
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, OrderStatus{RequestID: "r-" + buyer, ItemID: 1, Qty: 1, Status: st, OrderID: 1, ExpiresAt: time.Now().Add(10 * time.Second).UTC()})
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/orders/r-"+buyer+"/pay":
		f.mu.Lock()
		f.paid[buyer] = true
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"status": "PAID"})
	default:
		writeErr(w, http.StatusNotFound, "no_route")
	}
}

// TestQueueResalePlayers plays the waitlist's hand-off against the fake room:
// three sold-out tickets wait on their long polls. h1 (a payer) is offered
// a unit, claims it at once and pays; h2 (a decliner) is offered one and
// leaves it to lapse; that unit goes to the bot b1 (who never pays), whose
// first claim meets offer_gone (the offer dropped) and who, offered again,
// claims it and leaves the order unpaid. h3's ticket still reads admitted
// after the sell-out until it long-polls: its order is 410 sold_out, and
// it waits on the long poll (not reading and ordering again at once until
// it gives up) for the offer it then claims. The report counts 5 offers
// seen, 3 claims (1 a bot's), 1 declined, 1 offer_gone, 2 paid, 1 left
// unpaid, and its checks pass against a matching audit.
func TestQueueResalePlayers(t *testing.T) {
	f := newResaleRoom()
	srv := httptest.NewServer(f)
	defer srv.Close()
	c := srv.Client()
	c.Timeout = 5 * time.Second
	g := newQueueGame(c, srv.URL, 1)
	g.resale = &resalePlay{api: &API{Base: srv.URL, Client: g.poll}, unpaid: map[string]bool{"Bearer b1": true}, decline: map[string]bool{"Bearer h2": true}}
	// A hang guard only: the players are done as soon as the offers are.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The claim window of every offer: long enough that no offer ends
	// before its player claims it on a loaded machine; h2's ends when the
	// test says (lapse).
	const window = 10 * time.Second

	f.stale["h3"] = true
	now := time.Now()
	var h1, h2, h3, b1 ticketRun
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }() // if a wait below fails
	for _, p := range []func(){
		func() { h1 = g.human(ctx, "Bearer h1", now, 100*time.Millisecond) },
		func() { h3 = g.human(ctx, "Bearer h3", now, 100*time.Millisecond) },
		func() { h2 = g.human(ctx, "Bearer h2", now, 100*time.Millisecond) },
		func() { b1 = g.bot(ctx, 2, "Bearer b1", now, now, 20*time.Millisecond) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); p() }()
	}

	// The room acts on what the players did, not after guessed pauses.
	waits := func(buyers ...string) func() bool {
		return func() (all bool) {
			f.state(func() {
				all = true
				for _, b := range buyers {
					all = all && f.waiting[b] > 0
				}
			})
			return all
		}
	}
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, waits("h1", "h2", "h3", "b1"), "the sold-out players are not all waiting on their long polls")
	f.offer("h1", window)
	f.offer("h3", window)
	f.offer("h2", window)
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() (seen bool) {
		f.state(func() { seen = f.shown["h2"] > 0 })
		return seen
	}, "h2 was never shown its offer")
	if !f.lapse("h2") {
		t.Fatal("h2 claimed the offer it should let lapse")
	}
	f.state(func() { f.goneOnce["b1"] = true })
	f.offer("b1", window)
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
		met := false
		f.state(func() { met = slices.Contains(f.claims, "b1 403") })
		return met && waits("b1")()
	}, "b1's claim did not meet offer_gone, or b1 did not go back to its long poll after it")
	f.offer("b1", window)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the players did not finish: they should leave once they claimed or declined")
	}

	if !h1.Claim.Won || h1.Claim.RequestID != "r-h1" || len(h1.Offers) != 1 || h1.ClaimLatency <= 0 ||
		h1.ClaimLatency != h1.Claim.WonAt.Sub(h1.Offers[0].At) {
		t.Errorf("h1: claim %+v, offers %v, offer -> claim %v", h1.Claim, h1.Offers, h1.ClaimLatency)
	}
	if o := h1.Order; !o.Paid || o.LeftUnpaid || o.Status != "PAID" || o.ExpiresAt.IsZero() || !f.paid["h1"] {
		t.Errorf("h1's order %+v: should be paid", o)
	}
	if !h2.Declined || h2.Claim.Attempts != 0 || len(h2.Offers) != 1 || h2.Order.Status != "" {
		t.Errorf("h2: declined %v, %d claims, offers %v, order %+v", h2.Declined, h2.Claim.Attempts, h2.Offers, h2.Order)
	}
	if !b1.Claim.Won || b1.Claim.Outcomes["403 offer_gone"] != 1 || b1.Claim.Outcomes[OutAccepted] != 1 || len(b1.Offers) != 2 {
		t.Errorf("b1: claim outcomes %v, offers %v", b1.Claim.Outcomes, b1.Offers)
	}
	if o := b1.Order; !o.LeftUnpaid || o.Paid || o.Status != "UNPAID" || f.paid["b1"] {
		t.Errorf("b1's order %+v: should be left unpaid", o)
	}
	if b1.Skips[OutSoldOut] != 1 || b1.Won || h1.Won || h1.Attempts != 0 {
		t.Errorf("own orders: b1 skips %v won %v, h1 won %v with %d orders", b1.Skips, b1.Won, h1.Won, h1.Attempts)
	}
	if h3.Outcomes[OutSoldOut] != 1 || h3.Attempts != 1 || !h3.Claim.Won || !h3.Order.Paid {
		t.Errorf("h3: own orders %v, claim %+v, order %+v: one 410, then the offer claimed", h3.Outcomes, h3.Claim, h3.Order)
	}
	if f.lapsed != 1 {
		t.Errorf("%d offers lapsed, want h2's", f.lapsed)
	}
	if last, pw, cl := g.resale.learnt(); last.IsZero() || pw <= 0 || cl <= 0 || cl > window {
		t.Errorf("learnt: last expiry %v, payment window %v, claim window left %v", last, pw, cl)
	}

	runs := []ticketRun{h1, h2, h3, b1}
	bs := BotSettings{Unpaid: .5, Decline: .5, ClaimWindow: 2 * time.Second}
	st := summarizeResale(runs, 3, g.resale, bs, resaleEnd{Why: "quiet"})
	if st.OffersSeen != 5 || st.BotOffersSeen != 2 || st.Claims != 3 || st.BotClaims != 1 || st.BotsShareOfResold != 1.0/3 ||
		st.Declined != 1 || st.OfferGone != 1 || st.Paid != 2 || st.LeftUnpaid != 1 || st.Orders != 3 {
		t.Errorf("stats %+v", st)
	}
	if st.OfferToClaimP50MS <= 0 || st.OfferToClaimP90MS < st.OfferToClaimP50MS || st.ClaimWindowMS != 2000 || st.ClaimWindowLearnt || !st.PaymentWindowLearnt {
		t.Errorf("times %+v", st)
	}
	claimed := map[string]int{}
	for _, r := range runs {
		for k, v := range r.Claim.Outcomes {
			claimed[k] += v
		}
	}
	fillResaleAudit(st, &Audit{OK: true, Waitlist: &audit.Waitlist{In: 3, Offered: 5, Claimed: 3, Lapsed: 2}})
	if c := resaleChecks(st, claimed, true); len(c) != 0 {
		t.Errorf("checks %q", c)
	}
	// The audit counting a claim no buyer saw, and a claim refused with
	// another code, fail the run.
	st.Claimed = 4
	claimed["403 admission_invalid"] = 1
	st.HolderClaims = 1
	if c := resaleChecks(st, claimed, true); len(c) != 4 {
		t.Errorf("checks %q, want the refusal, the claims, the holder's claim and the counts", c)
	}
}

// TestQueueResaleSettings: the resale needs the queued run; a decline needs
// releases.
func TestQueueResaleSettings(t *testing.T) {
	ok := BotSettings{Bots: 10, StartIn: 5 * time.Second, Lead: 500 * time.Millisecond, Retry: 200 * time.Millisecond, HumansBefore: 2 * time.Second,
		HumansAfter: 8 * time.Second, HumanRetry: time.Second, Queue: true, QueueRate: 200, QueueOpenIn: 500 * time.Millisecond, Unpaid: .3, Decline: .1}
	if err := ok.Validate(); err != nil {
		t.Errorf("resale: %v", err)
	}
	for _, bad := range []func(*BotSettings){
		func(b *BotSettings) { b.Queue = false },
		func(b *BotSettings) { b.Unpaid = 0 },
		func(b *BotSettings) { b.Unpaid = 1.5 },
		func(b *BotSettings) { b.Decline = -.1 },
		func(b *BotSettings) { b.ResaleWait = -time.Second },
	} {
		b := ok
		bad(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%+v accepted", b)
		}
	}
	// Derived: 4 claim windows and 30 s past the later of a payment window
	// after the sell-out and the last unpaid order's expiry.
	sold := time.Now()
	if d := resaleBound(BotSettings{}, sold, sold.Add(5*time.Second), 8*time.Second, 2900*time.Millisecond); d != 8*time.Second+12*time.Second+30*time.Second {
		t.Errorf("derived bound %v", d)
	}
	if d := resaleBound(BotSettings{ClaimWindow: time.Second}, sold, sold.Add(20*time.Second), 8*time.Second, 0); d != 20*time.Second+4*time.Second+30*time.Second {
		t.Errorf("derived bound after a late expiry %v", d)
	}
	if d := resaleBound(BotSettings{}, sold, time.Time{}, 0, 0); d != 15*time.Minute+4*time.Minute+30*time.Second {
		t.Errorf("bound before anything was seen %v", d)
	}
	if d := resaleBound(BotSettings{ResaleWait: time.Minute}, sold, sold.Add(time.Hour), time.Second, time.Second); d != time.Minute {
		t.Errorf("given bound %v", d)
	}
}
