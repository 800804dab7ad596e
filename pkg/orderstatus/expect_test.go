package orderstatus

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// awaitExpected waits in the background, up to 10 s, for the request rid of
// user and item that e expects (a pending order of qty 1).
func (h *waitHarness) awaitExpected(e *Expected, user, item int64, rid string) <-chan View {
	got := make(chan View, 1)
	go func() {
		got <- h.r.Await(context.Background(), e, View{RequestID: rid, ItemID: item, Qty: 1, Status: Pending, UserID: user}, 10*time.Second)
	}()
	return got
}

// TestExpectedWaitReadsNothing: a wait registered before its request was
// published (POST /api/v1/orders?wait=) on a bucket whose subscription is
// up is answered by the announcement of the status stored after it,
// without reading the status at all (a poll after the 202 reads once:
// TestWarmWaitReadsOnce). The announced reader has no recheck, so an
// UNPAID answer is the announcement's.
func TestExpectedWaitReadsNothing(t *testing.T) {
	h, item := warmReader(t, 61)
	reads := countReads(t)

	rid := h.pendingOrder(62, item)
	e := h.r.Expect(rid)
	if e == nil || !e.subscribed || e.RequestID() != rid {
		t.Fatalf("Expect(%s) = %+v: want a wait on the lingering subscription", rid, e)
	}
	got := h.awaitExpected(e, 62, item, rid)
	h.waitingOn(item, 1)
	h.settle(62, item, rid)
	if v := <-got; v.Status != Unpaid || v.RequestID != rid || v.OrderID != 1 {
		t.Fatalf("got %+v, want the UNPAID order the announcement carried", v)
	}
	if n := reads.Load(); n != 0 {
		t.Fatalf("the expected wait read its status %d times, want 0", n)
	}
	h.waitingOn(item, 0)
}

// TestExpectedWaitMissesNothing: a wait registered where no subscription
// was up yet is answered by the status stored at once after Expect, while
// its subscription may still be on its way (an announcement it cannot
// hear): it reads once subscribed. Without that read the announced reader
// would answer PENDING at the 10 s deadline.
func TestExpectedWaitMissesNothing(t *testing.T) {
	h := announcedReader(t)
	item := testenv.ItemID()
	rid := h.pendingOrder(63, item)
	e := h.r.Expect(rid)
	if e == nil {
		t.Fatal("Expect: no wait registered")
	}
	h.settle(63, item, rid)
	got := h.awaitExpected(e, 63, item, rid)
	if v := <-got; v.Status != Unpaid || v.RequestID != rid {
		t.Fatalf("got %+v, want UNPAID (subscribed at Expect: %v)", v, e.subscribed)
	}
	h.noWaitsLeft()
}

// TestDropReleasesTheExpectedWait: the wait of a request that was not
// accepted is released with its subscription, and Drop(nil) is nothing.
func TestDropReleasesTheExpectedWait(t *testing.T) {
	h := announcedReader(t)
	item := testenv.ItemID()
	e := h.r.Expect(h.pendingOrder(64, item))
	if e == nil {
		t.Fatal("Expect: no wait registered")
	}
	if n, _ := h.r.waits.waiting(); n != 1 {
		t.Fatalf("%d waits registered, want 1", n)
	}
	h.r.Drop(e)
	h.r.Drop(nil)
	h.noWaitsLeft()
	if h.r.Expect("not-a-request-id") != nil {
		t.Fatal("Expect of a malformed id registered a wait")
	}
}
