package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestTicketNeverAdmittedAfterTheSellOut: a ticket whose turn has come is
// told admitted only if the item still has stock in Redis at that read,
// whatever this replica's reader of the item last saw: the reader reads
// every 100 ms and its read stands for 150 ms, so a ticket read just after
// the last unit went used to answer admitted (with a grant) while every
// order got 410. The reader's state is planted here as it stands in that
// window (stock 1, the ticket's turn come, read just now), after the last
// unit was sold.
func TestTicketNeverAdmittedAfterTheSellOut(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	now := time.Now()
	item := testenv.ItemID()
	h.putQueuedItem(item, 1, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour))
	_, tk := h.take(7, item)
	g, _, err := h.srv.grantFor(t.Context(), item, 999)
	if err != nil {
		t.Fatal(err)
	}
	if o := h.orderWith(999, item, g); o.Code != http.StatusAccepted {
		t.Fatalf("order of the last unit: %d %s", o.Code, o.Body)
	}
	// The reader's last read, from before the sale of that unit; its stop
	// channel is never closed and no goroutine reads for it, so it stays.
	stale := &watchedItem{refs: 1, sold: make(chan struct{}), stop: make(chan struct{}), moved: make(chan struct{}),
		read: true, serving: 1000, leftOK: true, left: 1, readAt: time.Now().Add(time.Hour)}
	h.srv.queueWatch.mu.Lock()
	h.srv.queueWatch.items[item] = stale
	h.srv.queueWatch.mu.Unlock()
	t.Cleanup(func() {
		h.srv.queueWatch.mu.Lock()
		delete(h.srv.queueWatch.items, item)
		h.srv.queueWatch.mu.Unlock()
	})
	if _, _, ok := h.srv.queueWatch.fresh(item, 150*time.Millisecond); !ok {
		t.Fatal("the planted read is not taken as fresh: the test would not test the cache")
	}
	r, v := h.ticketStatusOf(7, item, tk.Ticket, "")
	if r.Code != http.StatusOK || v.State != ticketSoldOut || v.AdmissionGrant != "" || v.StockLeft != 0 {
		t.Fatalf("ticket read after the sell-out: %d %s, want sold_out with no grant", r.Code, r.Body)
	}
}

// TestWaitingTicketNeverAdmittedAfterTheSellOut: a long poll woken by the
// gate reaching its position answers admitted only if Redis still has
// stock; here the reader saw stock 1 before the last unit went and then
// the gate move, which used to answer admitted with a grant.
func TestWaitingTicketNeverAdmittedAfterTheSellOut(t *testing.T) {
	h := waitHarness(t, 100)
	now := time.Now()
	item := testenv.ItemID()
	h.putQueuedItem(item, 1, now.Add(-time.Minute), now.Add(-time.Second), now.Add(time.Hour))
	_, tk := h.take(7, item)
	// A reader's state with the ticket's turn not yet come (serving 0)
	// and stock 1; no goroutine reads for it, so only the test moves it.
	wi := &watchedItem{sold: make(chan struct{}), stop: make(chan struct{}), moved: make(chan struct{}),
		read: true, serving: 0, leftOK: true, left: 1, readAt: time.Now().Add(time.Hour)}
	h.srv.queueWatch.mu.Lock()
	h.srv.queueWatch.items[item] = wi
	h.srv.queueWatch.mu.Unlock()
	answered := make(chan ticketStatus, 1)
	go func() {
		_, v := h.ticketStatusOf(7, item, tk.Ticket, "20s")
		answered <- v
	}()
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
		h.srv.queueWatch.mu.Lock()
		defer h.srv.queueWatch.mu.Unlock()
		return wi.refs == 1
	}, "the long poll did not wait on the planted reader")
	g, _, err := h.srv.grantFor(t.Context(), item, 999)
	if err != nil {
		t.Fatal(err)
	}
	if o := h.orderWith(999, item, g); o.Code != http.StatusAccepted {
		t.Fatalf("order of the last unit: %d %s", o.Code, o.Body)
	}
	wi.setServing(1000) // the gate's move, as the reader saw it
	select {
	case v := <-answered:
		if v.State != ticketSoldOut || v.AdmissionGrant != "" || v.StockLeft != 0 {
			t.Fatalf("long poll woken by the gate after the sell-out answered %+v, want sold_out with no grant", v)
		}
	case <-time.After(15 * time.Second): // a hang guard: the poll's own wait is 20 s
		t.Fatal("the long poll was not woken by the gate's move")
	}
}
