package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
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

// announcedHarness is a waitHarness without FLASHSALE_STATUS_RECHECK: a
// waiting poll reads again only after subscribing and when an announcement
// (or a subscription gap) wakes it, and its deadline answers the PENDING it
// last read. So a poll that answers a status other than PENDING was woken,
// whenever it answers: the test needs no latency bound to tell.
func announcedHarness(t *testing.T) *harness {
	return newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) {
		in.StatusWaitMax, in.StatusWaiters, in.StatusRecheck = 30*time.Second, 100, 0
	}})
}

// subscribed reports whether the waiting polls of item have their
// subscription: an announcement from now on reaches them.
func (s *statusWaits) subscribed(itemID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, w := range s.items {
		if k.ItemID != itemID {
			continue
		}
		select {
		case <-w.ready:
			if w.ok {
				return true
			}
		default:
		}
	}
	return false
}

// waitingOn polls until n polls wait and, if n > 0, item's subscription
// serves them.
func (h *harness) waitingOn(item int64, n int) {
	h.t.Helper()
	testenv.Eventually(h.t, 10*time.Second, 5*time.Millisecond, func() bool {
		w, _ := h.srv.waits.waiting()
		return w == n && (n == 0 || h.srv.waits.subscribed(item))
	}, "%d polls waiting on item %d, subscribed", n, item)
}

// noWaitsLeft polls until no poll waits, no subscription is left and no
// goroutine follows one.
func (h *harness) noWaitsLeft() {
	h.t.Helper()
	testenv.Eventually(h.t, 10*time.Second, 5*time.Millisecond, func() bool {
		n, items := h.srv.waits.waiting()
		return n == 0 && items == 0 && followers() == 0
	}, "the waiters, their subscriptions and their goroutines to go")
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

// settle stores rid's UNPAID status the way the consumer does after its
// commit (orderstatus.Put, status_put.lua).
func (h *harness) settle(user, item int64, rid string) time.Time {
	h.t.Helper()
	exp := time.Now().Add(15 * time.Minute).UTC()
	v := orderstatus.View{RequestID: rid, ItemID: item, Qty: 1, Status: orderstatus.Unpaid, OrderID: 1, ExpiresAt: &exp, UserID: user}
	at := time.Now()
	if err := orderstatus.Put(context.Background(), h.st, v); err != nil {
		h.t.Fatal(err)
	}
	return at
}

// TestWaitReturnsOnCommit: a poll waiting on a PENDING request is woken by
// the status the consumer caches after its commit. Without the recheck
// (announcedHarness) nothing else wakes it, and its deadline would answer
// PENDING: an UNPAID answer is the announcement's. How fast it comes is
// measured by the bench (accept -> terminal with -poll-wait), not asserted
// here.
func TestWaitReturnsOnCommit(t *testing.T) {
	h := announcedHarness(t)
	item := testenv.ItemID()
	h.putItem(item, 10, 1)
	rid := h.pendingOrder(7, item)
	got := make(chan timedStatus, 1)
	go func() { got <- h.poll(context.Background(), 7, rid, "10s") }()
	h.waitingOn(item, 1)
	select {
	case r := <-got:
		t.Fatalf("answered %d %s before the commit", r.code, r.body)
	default:
	}
	committed := h.settle(7, item, rid)
	r := <-got
	if r.code != 200 || r.status != orderstatus.Unpaid {
		t.Fatalf("got %d %s %v after the commit, want 200 UNPAID (the announcement's)", r.code, r.body, r.at.Sub(committed))
	}
	h.noWaitsLeft()
}

// TestWaitDeadline: a request that never settles is answered PENDING at the
// end of its wait, not before, and not held to the 30 s cap.
func TestWaitDeadline(t *testing.T) {
	h := waitHarness(t, 100)
	item := testenv.ItemID()
	h.putItem(item, 10, 1)
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

// TestWaitNoLostWakeup: a status stored after the first read and before the
// waiter's subscription is seen by the read that follows the subscription,
// so the poll answers it instead of PENDING at its deadline (without the
// recheck, announcedHarness, nothing else would read it again).
func TestWaitNoLostWakeup(t *testing.T) {
	h := announcedHarness(t)
	item := testenv.ItemID()
	h.putItem(item, 10, 1)
	rid := h.pendingOrder(9, item)
	testHookBeforeWait = func() { h.settle(9, item, rid) }
	t.Cleanup(func() { testHookBeforeWait = nil })
	start := time.Now()
	r := h.poll(context.Background(), 9, rid, "3s")
	if r.code != 200 || r.status != orderstatus.Unpaid {
		t.Fatalf("got %d %s after %v, want 200 UNPAID: the status stored before the subscription was missed", r.code, r.body, r.at.Sub(start))
	}
}

// TestWaitBound: past FLASHSALE_STATUS_WAITERS a poll with wait answers at
// once; the waiting ones still get their wake-up.
func TestWaitBound(t *testing.T) {
	h := waitHarness(t, 2)
	item := testenv.ItemID()
	h.putItem(item, 10, 1)
	rids := []string{h.pendingOrder(11, item), h.pendingOrder(12, item), h.pendingOrder(13, item)}
	var wg sync.WaitGroup
	got := make([]timedStatus, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = h.poll(context.Background(), int64(11+i), rids[i], "10s") }()
	}
	h.waitingOn(item, 2)
	start := time.Now()
	r := h.poll(context.Background(), 13, rids[2], "10s")
	if r.code != 200 || r.status != orderstatus.Pending || !answeredBefore(r, start, 10*time.Second) {
		t.Fatalf("third poll: %d %s after %v, want PENDING at once, not at its 10s deadline", r.code, r.body, r.at.Sub(start))
	}
	if n, _ := h.srv.waits.waiting(); n != 2 {
		t.Fatalf("%d polls waiting, want 2", n)
	}
	h.settle(11, item, rids[0])
	h.settle(12, item, rids[1])
	wg.Wait()
	for i, g := range got {
		if g.status != orderstatus.Unpaid {
			t.Fatalf("waiting poll %d: %d %s, want UNPAID", i, g.code, g.body)
		}
	}
}

// TestWaitOtherUsersRequest: waiting does not change the owner check: another
// user's request is a 404 at once, and an invalid wait a 400.
func TestWaitOtherUsersRequest(t *testing.T) {
	h := waitHarness(t, 100)
	item := testenv.ItemID()
	h.putItem(item, 10, 1)
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

// TestWaitShutdownAndHangup: a poll whose client goes away, and every poll
// when the server shuts down, stop waiting at once and leave nothing behind.
func TestWaitShutdownAndHangup(t *testing.T) {
	h := waitHarness(t, 100)
	item := testenv.ItemID()
	h.putItem(item, 10, 1)
	rid := h.pendingOrder(31, item)
	const wait = 10 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan timedStatus, 1)
	sent := time.Now()
	go func() { got <- h.poll(ctx, 31, rid, "10s") }()
	h.waitingOn(item, 1)
	cancel()
	hungUp := time.Now()
	if r := <-got; !answeredBefore(r, sent, wait) {
		t.Fatalf("hung-up poll answered %v later, at its %v deadline", r.at.Sub(hungUp), wait)
	}
	h.noWaitsLeft()

	sent = time.Now()
	go func() { got <- h.poll(context.Background(), 31, rid, "10s") }()
	h.waitingOn(item, 1)
	h.srv.StopWaiting()
	stopped := time.Now()
	r := <-got
	if r.code != 200 || r.status != orderstatus.Pending || !answeredBefore(r, sent, wait) {
		t.Fatalf("at shutdown: %d %s %v later, want PENDING at once, not at its %v deadline", r.code, r.body, r.at.Sub(stopped), wait)
	}
	start := time.Now()
	if r := h.poll(context.Background(), 31, rid, "10s"); r.status != orderstatus.Pending || !answeredBefore(r, start, wait) {
		t.Fatalf("after shutdown: %s after %v, want PENDING at once, not at its %v deadline", r.body, r.at.Sub(start), wait)
	}
}

// TestWaitSurvivesSubscriptionLoss: when Redis drops the subscription's
// connection, a status stored before go-redis subscribed again is not
// lost: the reconnect wakes every waiter of the item to read again.
// Without the recheck (announcedHarness) only that wake-up can answer
// UNPAID: the deadline answers PENDING.
func TestWaitSurvivesSubscriptionLoss(t *testing.T) {
	h := announcedHarness(t)
	item := testenv.ItemID()
	h.putItem(item, 10, 1)
	rid := h.pendingOrder(41, item)
	got := make(chan timedStatus, 1)
	go func() { got <- h.poll(context.Background(), 41, rid, "10s") }()
	h.waitingOn(item, 1)
	if err := h.rdb.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	committed := h.settle(41, item, rid) // while the subscription is down
	r := <-got
	if r.code != 200 || r.status != orderstatus.Unpaid {
		t.Fatalf("got %d %s %v after the commit, want UNPAID: the announcement lost with the connection was not made up for", r.code, r.body, r.at.Sub(committed))
	}
}

// followers counts the goroutines following an item's subscription.
func followers() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "(*statusWaits).follow(")
}
