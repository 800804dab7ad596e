package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// ticketStatusOf is GET .../queue/{ticket} as user, with ?wait= when wait
// is not empty.
func (h *harness) ticketStatusOf(user, item int64, ticket, wait string) (resp, api.TicketStatus) {
	path := fmt.Sprintf("/api/v1/items/%d/queue/%s", item, ticket)
	if wait != "" {
		path += "?wait=" + wait
	}
	r := h.do(http.MethodGet, path, "", h.as(user))
	var v api.TicketStatus
	if r.Code == http.StatusOK {
		v = decode[api.TicketStatus](h.t, r)
	}
	return r, v
}

// TestTicketStatusBeforeTheStart: only the owner reads a ticket; before
// starts_at it is waiting, with no position yet (the order is not drawn)
// and the time to the start as its estimate.
func TestTicketStatusBeforeTheStart(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	item := testenv.ItemID()
	h.putQueuedItem(item, 5, now.Add(-time.Minute), now.Add(time.Hour), now.Add(2*time.Hour))
	_, tk := h.take(7, item)
	r, v := h.ticketStatusOf(7, item, tk.Ticket, "")
	if r.Code != http.StatusOK || v.State != api.TicketWaiting || v.Position != nil || v.EstimatedWaitMs == nil ||
		*v.EstimatedWaitMs < (59*time.Minute).Milliseconds() || v.StockLeft != 5 {
		t.Fatalf("before the start: %d %s", r.Code, r.Body)
	}
	if r, _ := h.ticketStatusOf(8, item, tk.Ticket, ""); r.Code != http.StatusNotFound {
		t.Errorf("another buyer's ticket: %d %s, want 404", r.Code, r.Body)
	}
	if r, _ := h.ticketStatusOf(7, item, "00000000000000000000000000000000", ""); r.Code != http.StatusNotFound {
		t.Errorf("unknown ticket: %d %s, want 404", r.Code, r.Body)
	}
	if r, _ := h.ticketStatusOf(7, item, "nothex", ""); r.Code != http.StatusBadRequest {
		t.Errorf("malformed ticket: %d %s, want 400", r.Code, r.Body)
	}
}

// TestTicketPositionsFollowTheShuffle: tickets taken before starts_at get
// the positions the item's seed gives (checked through the transcript a
// buyer would verify), those taken after queue behind them by arrival, and a
// long poll waiting at the start answers admitted at the start.
func TestTicketPositionsFollowTheShuffle(t *testing.T) {
	h := waitHarness(t, 100)
	h.runGate()
	now := time.Now()
	item := testenv.ItemID()
	starts := now.Add(2 * time.Second)
	h.putQueuedItem(item, 100, now.Add(-time.Minute), starts, now.Add(time.Hour))
	const early, late = 30, 5
	tickets := make([]api.Ticket, early+late)
	for i := range early {
		r, v := h.take(int64(100+i), item)
		if r.Code != http.StatusCreated || !v.TakenAt.Before(starts) {
			t.Fatalf("early ticket %d: %d %s", i, r.Code, r.Body)
		}
		tickets[i] = v
	}
	// A long poll across the start answers once the order is drawn, with
	// the ticket's position; the gate then admits it.
	r, v := h.ticketStatusOf(100, item, tickets[0].Ticket, "10s")
	if r.Code != http.StatusOK || v.Position == nil || time.Now().Before(starts) {
		t.Fatalf("long poll across the start: %d %s", r.Code, r.Body)
	}
	h.admitted(100, item, tickets[0].Ticket, 5*time.Second)
	for i := range late {
		r, v := h.take(int64(100+early+i), item)
		if r.Code != http.StatusCreated {
			t.Fatalf("late ticket %d: %d %s", i, r.Code, r.Body)
		}
		tickets[early+i] = v
	}
	seed, err := waitroom.QueueSeed(t.Context(), h.db, item)
	if err != nil {
		t.Fatal(err)
	}
	var entries []draw.Entry
	for _, tk := range tickets {
		entries = append(entries, draw.Entry{Ticket: draw.Hash(tk.Ticket), Arrival: tk.Arrival})
	}
	// Round 0 is the early tickets, committed by the root the gate
	// published at the start; the order is drawn here from the seed and
	// that root alone.
	r0, err := draw.CloseRound(0, 1, early, entries)
	if err != nil {
		t.Fatal(err)
	}
	if closed, err := waitroom.ClosedRounds(t.Context(), h.db, item); err != nil || len(closed) != 1 || closed[0].Root != r0.Root {
		t.Fatalf("closed rounds %+v, %v; want round 0 with root %s", closed, err, r0.Root)
	}
	tr, err := draw.NewRoundTranscript(item, seed, []draw.Round{r0}, entries)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Commitment != tickets[0].QueueCommitment {
		t.Fatalf("the seed's commitment %s is not the one the tickets were taken under (%s)", tr.Commitment, tickets[0].QueueCommitment)
	}
	var positions []int64
	for i, tk := range tickets {
		r, v := h.ticketStatusOf(int64(100+i), item, tk.Ticket, "")
		if r.Code != http.StatusOK || v.Position == nil || *v.Ahead != *v.Position-1 {
			t.Fatalf("ticket %d: %d %s", i, r.Code, r.Body)
		}
		place, err := draw.OwnPositionRounds(tr, tk.Ticket, tk.Arrival)
		if err != nil {
			t.Fatal(err)
		}
		if want := place.Position; *v.Position != int64(want) {
			t.Errorf("ticket of arrival %d at position %d, the transcript says %d", tk.Arrival, *v.Position, want)
		}
		positions = append(positions, *v.Position)
	}
	slices.Sort(positions)
	for i, p := range positions {
		if p != int64(i+1) {
			t.Fatalf("positions %v are not 1..%d", positions, early+late)
		}
	}
}

// TestSoldOutFanOut: every waiting long poll of an item's tickets is woken
// by the item selling out and says sold_out, before its own deadline.
func TestSoldOutFanOut(t *testing.T) {
	h := waitHarness(t, 100)
	now := time.Now()
	item := testenv.ItemID()
	h.putQueuedItem(item, 1, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour))
	const waiters = 20
	tickets := make([]api.Ticket, waiters)
	for i := range waiters {
		_, tickets[i] = h.take(int64(200+i), item)
	}
	type answer struct {
		v  api.TicketStatus
		at time.Time
	}
	answers := make([]answer, waiters)
	const wait = 20 * time.Second
	sent := time.Now()
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, v := h.ticketStatusOf(int64(200+i), item, tickets[i].Ticket, "20s")
			answers[i] = answer{v, time.Now()}
		}()
	}
	// Every poll is waiting before the last unit goes.
	testenv.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool {
		admit, _, _ := h.srv.room.Waiting(item)
		return admit == waiters
	}, "the polls did not all wait")
	g, _, err := h.srv.room.Grant(t.Context(), item, 999)
	if err != nil {
		t.Fatal(err)
	}
	if o := h.orderWith(999, item, g); o.Code != http.StatusAccepted {
		t.Fatalf("order of the last unit: %d %s", o.Code, o.Body)
	}
	sold := time.Now()
	wg.Wait()
	for i, a := range answers {
		if a.v.State != api.TicketSoldOut || a.v.StockLeft != 0 {
			t.Errorf("poll %d answered %+v, want sold_out", i, a.v)
		}
		if !a.at.Before(sent.Add(wait)) {
			t.Errorf("poll %d answered %s after the sell-out, at its %s deadline: the sell-out did not wake it", i, a.at.Sub(sold), wait)
		}
	}
}

// TestBucketedItemWithAQueue: a bucketed item's waiting room lives in
// bucket 0's slot beside its meta; tickets and positions work as for one
// bucket, and the availability a poll shows is the sum of the buckets.
func TestBucketedItemWithAQueue(t *testing.T) {
	h := waitHarness(t, 100)
	h.runGate()
	now := time.Now()
	item := testenv.ItemID()
	body := fmt.Sprintf(`{"name":"b","price_cents":1,"stock":40,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"buckets":4,"queue":true,"queue_opens_at":%q}`,
		now.Add(-time.Second).UTC().Format(time.RFC3339Nano), now.Add(time.Hour).UTC().Format(time.RFC3339Nano), now.Add(-time.Minute).UTC().Format(time.RFC3339Nano))
	if r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", item), body, h.admin()); r.Code != http.StatusOK {
		t.Fatalf("put: %d %s", r.Code, r.Body)
	}
	var positions []int64
	for i := range 6 {
		r, tk := h.take(int64(500+i), item)
		if r.Code != http.StatusCreated {
			t.Fatalf("ticket %d: %d %s", i, r.Code, r.Body)
		}
		st := h.admitted(int64(500+i), item, tk.Ticket, 5*time.Second)
		if st.StockLeft != 40-int64(i) || st.Position == nil {
			t.Fatalf("ticket %d: %+v, want admitted with %d left", i, st, 40-i)
		}
		positions = append(positions, *st.Position)
		// The grant orders from the buyer's home bucket, whichever it is.
		if o := h.orderWith(int64(500+i), item, st.AdmissionGrant); o.Code != http.StatusAccepted {
			t.Fatalf("order of ticket %d: %d %s", i, o.Code, o.Body)
		}
	}
	// Taken after the start: in arrival order.
	if !slices.Equal(positions, []int64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("positions %v, want arrival order after the start", positions)
	}
}
