package orderstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// The long polls' wait (Reader.Poll over statusWaits), read as the status
// route reads. A pending request is the
// reservation admit.lua writes, and its settling the status the consumer
// caches after its commit (Put, status_put.lua), so no order path runs.

// waitHarness is a Reader on the test stack's Redis and a database of its
// own.
type waitHarness struct {
	t   *testing.T
	r   *Reader
	rdb redis.UniversalClient
	st  *stock.Store
}

func newWaitHarness(t *testing.T, cfg ReaderConfig) *waitHarness {
	t.Helper()
	rdb := testenv.Redis(t)
	db, _ := testenv.MySQL(t)
	st := stock.New(rdb)
	cfg.StoreTimeout = 2 * time.Second
	r := NewReader(cfg, st, db, prometheus.NewRegistry(), testenv.LogTail(t))
	r.waits.linger = 0 // a subscription goes with its last waiter (noWaitsLeft); TestWarmWaitReadsOnce sets one
	t.Cleanup(r.Stop)
	return &waitHarness{t: t, r: r, rdb: rdb, st: st}
}

// waitReader is a reader whose polls may wait, at most waiters at once,
// with the recheck at the flag's default.
func waitReader(t *testing.T, waiters int) *waitHarness {
	return newWaitHarness(t, ReaderConfig{Waiters: waiters, Recheck: 750 * time.Millisecond})
}

// announcedReader is a waitReader without FLASHSALE_STATUS_RECHECK: a
// waiting poll reads again only after subscribing and when an announcement
// (or a subscription gap) wakes it, and its deadline answers the PENDING it
// last read. So a poll that answers a status other than PENDING was woken,
// whenever it answers: the test needs no latency bound to tell.
func announcedReader(t *testing.T) *waitHarness {
	return newWaitHarness(t, ReaderConfig{Waiters: 100})
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
func (h *waitHarness) waitingOn(item int64, n int) {
	h.t.Helper()
	testenv.Eventually(h.t, 10*time.Second, 5*time.Millisecond, func() bool {
		w, _ := h.r.waits.waiting()
		return w == n && (n == 0 || h.r.waits.subscribed(item))
	}, "%d polls waiting on item %d, subscribed", n, item)
}

// noWaitsLeft polls until no poll waits, no subscription is left and no
// goroutine follows one.
func (h *waitHarness) noWaitsLeft() {
	h.t.Helper()
	testenv.Eventually(h.t, 10*time.Second, 5*time.Millisecond, func() bool {
		n, items := h.r.waits.waiting()
		return n == 0 && items == 0 && followers() == 0
	}, "the waiters, their subscriptions and their goroutines to go")
}

// answeredBefore reports whether r, a poll sent at sent with a wait of
// wait, was answered before its wait could end: the deadline timer starts
// after sent, so an answer at the deadline comes at sent+wait or later. It
// orders two events; it is not a latency bound.
func answeredBefore(r timedStatus, sent time.Time, wait time.Duration) bool {
	return r.at.Before(sent.Add(wait))
}

// pendingOrder reserves one unit of item for user, as admit.lua does, and
// returns the request id.
func (h *waitHarness) pendingOrder(user, item int64) string {
	h.t.Helper()
	rid := reqid.New(item, time.Now())
	key := stock.RequestKeys(item, rid).Reservations
	if err := h.rdb.HSet(context.Background(), key, rid, fmt.Sprintf("%d:1:%d", user, time.Now().UnixMilli())).Err(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { h.rdb.Del(context.Background(), key) })
	return rid
}

// timedStatus is a poll's answer as the status route would send it: its
// code (200, 404 for ErrNoRequest, 503 for ErrUnavailable), its status and
// when it came.
type timedStatus struct {
	code   int
	status string
	at     time.Time
	body   string
}

// poll reads rid's status as user and, while PENDING, waits up to wait (a
// duration as ?wait= writes it; ctx may cancel it).
func (h *waitHarness) poll(ctx context.Context, user int64, rid, wait string) timedStatus {
	d, err := time.ParseDuration(wait)
	if err != nil {
		h.t.Fatalf("wait %q: %v", wait, err)
	}
	v, err := h.r.Poll(ctx, rid, user, d)
	code := 200
	switch {
	case errors.Is(err, ErrNoRequest):
		code = 404
	case err != nil:
		code = 503
	}
	body, _ := json.Marshal(v)
	if err != nil {
		body = []byte(err.Error())
	}
	return timedStatus{code: code, status: v.Status, at: time.Now(), body: string(body)}
}

// settle stores rid's UNPAID status the way the consumer does after its
// commit (Put, status_put.lua).
func (h *waitHarness) settle(user, item int64, rid string) time.Time {
	h.t.Helper()
	exp := time.Now().Add(15 * time.Minute).UTC()
	v := View{RequestID: rid, ItemID: item, Qty: 1, Status: Unpaid, OrderID: 1, ExpiresAt: &exp, UserID: user}
	at := time.Now()
	if err := Put(context.Background(), h.st, v); err != nil {
		h.t.Fatal(err)
	}
	return at
}

// settledPoll makes a pending order of item for user, long-polls it and,
// once the poll waits on item's subscription, settles it: it returns the
// poll's answer.
func (h *waitHarness) settledPoll(user, item int64) timedStatus {
	h.t.Helper()
	rid, got := h.waitingPoll(user, item)
	h.settle(user, item, rid)
	return <-got
}

// waitingPoll makes a pending order of item for user and long-polls it (up
// to 10 s) in the background; it returns the request id and where the
// answer will come, once the poll waits on item's subscription.
func (h *waitHarness) waitingPoll(user, item int64) (string, <-chan timedStatus) {
	h.t.Helper()
	rid := h.pendingOrder(user, item)
	got := make(chan timedStatus, 1)
	go func() { got <- h.poll(context.Background(), user, rid, "10s") }()
	h.waitingOn(item, 1)
	return rid, got
}

// followers counts the goroutines following an item's subscription.
func followers() int { return testenv.GoroutinesIn("(*statusWaits).follow(") }

// TestWaitReturnsOnCommit: a poll waiting on a PENDING request is woken by
// the status the consumer caches after its commit. Without the recheck
// (announcedHarness) nothing else wakes it, and its deadline would answer
// PENDING: an UNPAID answer is the announcement's. How fast it comes is
// measured by the bench (accept -> terminal with -poll-wait), not asserted
// here.
func TestWaitReturnsOnCommit(t *testing.T) {
	h := announcedReader(t)
	item := testenv.ItemID()
	rid, got := h.waitingPoll(7, item)
	select {
	case r := <-got:
		t.Fatalf("answered %d %s before the commit", r.code, r.body)
	default:
	}
	committed := h.settle(7, item, rid)
	r := <-got
	if r.code != 200 || r.status != Unpaid {
		t.Fatalf("got %d %s %v after the commit, want 200 UNPAID (the announcement's)", r.code, r.body, r.at.Sub(committed))
	}
	h.noWaitsLeft()
}

// TestWaitNoLostWakeup: a status stored after the first read and before the
// waiter's subscription is seen by the read that follows the subscription,
// so the poll answers it instead of PENDING at its deadline (without the
// recheck, announcedHarness, nothing else would read it again).
func TestWaitNoLostWakeup(t *testing.T) {
	h := announcedReader(t)
	item := testenv.ItemID()
	rid := h.pendingOrder(9, item)
	testHookBeforeWait = func() { h.settle(9, item, rid) }
	t.Cleanup(func() { testHookBeforeWait = nil })
	start := time.Now()
	r := h.poll(context.Background(), 9, rid, "3s")
	if r.code != 200 || r.status != Unpaid {
		t.Fatalf("got %d %s after %v, want 200 UNPAID: the status stored before the subscription was missed", r.code, r.body, r.at.Sub(start))
	}
}

// TestWaitRereadsSoonAfterASlotMove: a waiting poll's re-read that a slot
// move refuses (TRYAGAIN) is tried again after a move's pause, not left to
// the next recheck or announcement. Here there is neither (announcedReader,
// and the status was stored before the subscription), so without the
// retry the poll answered PENDING, the last view, at once; the cluster
// fault suite saw such a poll answered 1.025 s after its status changed
// during a move. The status is the retry's.
func TestWaitRereadsSoonAfterASlotMove(t *testing.T) {
	h := announcedReader(t)
	item := testenv.ItemID()
	rid := h.pendingOrder(10, item)
	testHookBeforeWait = func() { h.settle(10, item, rid) }
	refused := 0
	testHookReread = func() error {
		if refused < 2 {
			refused++
			return errors.New("TRYAGAIN Multiple keys request during rehashing of slot")
		}
		return nil
	}
	t.Cleanup(func() { testHookBeforeWait, testHookReread = nil, nil })
	start := time.Now()
	r := h.poll(context.Background(), 10, rid, "10s")
	if r.code != 200 || r.status != Unpaid {
		t.Fatalf("got %d %s after %v, want 200 UNPAID read again after the move's refusals", r.code, r.body, r.at.Sub(start))
	}
	if refused != 2 {
		t.Fatalf("%d re-reads refused, want 2", refused)
	}
}

// TestWaitBound: past FLASHSALE_STATUS_WAITERS a poll with wait answers at
// once; the waiting ones still get their wake-up.
func TestWaitBound(t *testing.T) {
	h := waitReader(t, 2)
	item := testenv.ItemID()
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
	if r.code != 200 || r.status != Pending || !answeredBefore(r, start, 10*time.Second) {
		t.Fatalf("third poll: %d %s after %v, want PENDING at once, not at its 10s deadline", r.code, r.body, r.at.Sub(start))
	}
	if n, _ := h.r.waits.waiting(); n != 2 {
		t.Fatalf("%d polls waiting, want 2", n)
	}
	h.settle(11, item, rids[0])
	h.settle(12, item, rids[1])
	wg.Wait()
	for i, g := range got {
		if g.status != Unpaid {
			t.Fatalf("waiting poll %d: %d %s, want UNPAID", i, g.code, g.body)
		}
	}
}

// TestWaitShutdownAndHangup: a poll whose client goes away, and every poll
// when the server shuts down, stop waiting at once and leave nothing behind.
func TestWaitShutdownAndHangup(t *testing.T) {
	h := waitReader(t, 100)
	item := testenv.ItemID()
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
	h.r.Stop()
	stopped := time.Now()
	r := <-got
	if r.code != 200 || r.status != Pending || !answeredBefore(r, sent, wait) {
		t.Fatalf("at shutdown: %d %s %v later, want PENDING at once, not at its %v deadline", r.code, r.body, r.at.Sub(stopped), wait)
	}
	start := time.Now()
	if r := h.poll(context.Background(), 31, rid, "10s"); r.status != Pending || !answeredBefore(r, start, wait) {
		t.Fatalf("after shutdown: %s after %v, want PENDING at once, not at its %v deadline", r.body, r.at.Sub(start), wait)
	}
}

// TestWaitSurvivesSubscriptionLoss: when Redis drops the subscription's
// connection, a status stored before go-redis subscribed again is not
// lost: the reconnect wakes every waiter of the item to read again.
// Without the recheck (announcedHarness) only that wake-up can answer
// UNPAID: the deadline answers PENDING.
func TestWaitSurvivesSubscriptionLoss(t *testing.T) {
	h := announcedReader(t)
	item := testenv.ItemID()
	rid, got := h.waitingPoll(41, item)
	if err := h.rdb.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	committed := h.settle(41, item, rid) // while the subscription is down
	r := <-got
	if r.code != 200 || r.status != Unpaid {
		t.Fatalf("got %d %s %v after the commit, want UNPAID: the announcement lost with the connection was not made up for", r.code, r.body, r.at.Sub(committed))
	}
}

// TestWaitAnswersALostAnnouncement: a status stored with no announcement
// reaching the ingress (pub/sub is fire-and-forget: a status stored on a
// primary importing the item's slot is announced where no ingress listens,
// a failover drops messages in flight) is still answered, by the waiting
// poll's own re-read every FLASHSALE_STATUS_RECHECK: no announcement comes,
// and the end of the ?wait= would answer the PENDING the poll last read, so
// an UNPAID answer is the recheck's.
func TestWaitAnswersALostAnnouncement(t *testing.T) {
	h := waitReader(t, 100)
	item := testenv.ItemID()
	rid, got := h.waitingPoll(43, item)
	// What status_put.lua stores, without its SPUBLISH.
	exp := time.Now().Add(15 * time.Minute).UTC()
	v := View{RequestID: rid, ItemID: item, Qty: 1, Status: Unpaid, OrderID: 1, ExpiresAt: &exp}
	b, err := json.Marshal(cached{View: v, Owner: 43})
	if err != nil {
		t.Fatal(err)
	}
	key := stock.RequestKeys(item, rid).Status(rid)
	stored := time.Now()
	if err := h.rdb.Set(context.Background(), key, strconv.Itoa(int(RankUnpaid))+"|"+string(b), 15*time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.code != 200 || r.status != Unpaid {
		t.Fatalf("got %d %s %v after the status was stored unannounced, want 200 UNPAID: the poll waited out its 10s instead of reading again", r.code, r.body, r.at.Sub(stored))
	}
}

// TestWarmWaitReadsOnce: a long poll on a bucket whose subscription is up
// (another poll's, just answered) costs one read of Redis: its first. It
// joins the subscription before that read, so no status stored after the
// read can be missed and no re-read is needed after subscribing; and the
// announcement that wakes it carries the status, so it answers without
// reading again. Before, the same poll read three times: its first read,
// once more after subscribing, once more when woken (issue 42: the long
// poll's three lookup.lua calls were a third of an order's Redis scripts).
func TestWarmWaitReadsOnce(t *testing.T) {
	h, item := warmReader(t, 51)
	reads := countReads(t)
	r := h.settledPoll(52, item)
	if r.code != 200 || r.status != Unpaid {
		t.Fatalf("got %d %s, want 200 UNPAID (the announcement's)", r.code, r.body)
	}
	if n := reads.Load(); n != 1 {
		t.Fatalf("the poll read its status %d times, want 1: its first read, then the status the announcement carried", n)
	}
}

// warmReader is an announcedReader whose subscriptions linger a minute, and
// an item whose subscription is up: user's poll of it was answered.
func warmReader(t *testing.T, user int64) (*waitHarness, int64) {
	t.Helper()
	h := announcedReader(t)
	h.r.waits.linger = time.Minute
	item := testenv.ItemID()
	if r := h.settledPoll(user, item); r.status != Unpaid {
		t.Fatalf("warm-up poll: %d %s, want UNPAID", r.code, r.body)
	}
	return h, item
}

// countReads counts the status reads (Reader.Read) from now to the test's
// end.
func countReads(t *testing.T) *atomic.Int64 {
	var reads atomic.Int64
	testHookRead = func() { reads.Add(1) }
	t.Cleanup(func() { testHookRead = nil })
	return &reads
}

// TestSubscriptionLingersThenGoes: an item bucket's subscription outlives
// its last waiter by the linger, for the next poll to join, and then goes
// with the goroutine that followed it.
func TestSubscriptionLingersThenGoes(t *testing.T) {
	h := announcedReader(t)
	h.r.waits.linger = 300 * time.Millisecond
	item := testenv.ItemID()
	if r := h.settledPoll(61, item); r.status != Unpaid {
		t.Fatalf("got %d %s, want UNPAID", r.code, r.body)
	}
	if n, items := h.r.waits.waiting(); n != 0 || items != 1 {
		t.Fatalf("%d polls and %d subscriptions right after the answer, want 0 and 1 (lingering)", n, items)
	}
	h.noWaitsLeft()
}

// TestUnknownRequestOpensNoSubscription: a long poll of a request id nobody
// made (a well-formed id of any item) answers 404 at once and subscribes to
// nothing: only a request found pending opens a subscription, so made-up
// ids cannot make an ingress hold one connection per item.
func TestUnknownRequestOpensNoSubscription(t *testing.T) {
	h := announcedReader(t)
	h.r.waits.linger = time.Minute
	item := testenv.ItemID()
	start := time.Now()
	r := h.poll(context.Background(), 71, reqid.New(item, time.Now()), "10s")
	if r.code != 404 || !answeredBefore(r, start, 10*time.Second) {
		t.Fatalf("got %d %s after %v, want 404 at once", r.code, r.body, r.at.Sub(start))
	}
	if n, items := h.r.waits.waiting(); n != 0 || items != 0 {
		t.Fatalf("%d polls and %d subscriptions after the 404, want none", n, items)
	}
}

// TestShutdownEndsLingeringSubscriptions: at shutdown a subscription kept
// after its last waiter (the linger) goes at once with its goroutine, not
// at the linger's end: the ingress's Redis connections close with it.
func TestShutdownEndsLingeringSubscriptions(t *testing.T) {
	h := announcedReader(t)
	h.r.waits.linger = time.Hour
	item := testenv.ItemID()
	if r := h.settledPoll(81, item); r.status != Unpaid {
		t.Fatalf("got %d %s, want UNPAID", r.code, r.body)
	}
	if _, items := h.r.waits.waiting(); items != 1 {
		t.Fatalf("%d subscriptions after the answer, want 1 lingering", items)
	}
	h.r.Stop()
	h.noWaitsLeft()
}
