package orderstatus

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// statusWaits is the per-process fan-out behind GET ...?wait=: ONE Redis
// subscription per item that has waiting polls, shared by all of them, and a
// map request id -> waiters that an announcement (status_put.lua publishes
// the request id of every status it stores) wakes. A woken poll reads its
// status again, from Redis like any poll; nothing is held while it waits but
// a goroutine and its HTTP connection, never a MySQL connection.
//
// The number of waiting polls is bounded (FLASHSALE_STATUS_WAITERS), and so
// is the number of subscriptions, one per item with a waiter. An item's
// subscription closes with its last waiter.
type statusWaits struct {
	st    *Store
	max   int
	log   *slog.Logger
	subTO time.Duration // bounds one subscribe

	mu     sync.Mutex
	n      int                      // waiting polls
	items  map[bucketKey]*itemWatch // one per bucket of an item
	closed bool
	done   chan struct{} // closed by stop: every waiter answers now
}

// bucketKey names one bucket of an item: a status is announced on the
// channel of the bucket its request was admitted in.
type bucketKey struct {
	ItemID int64
	Bucket int
}

// itemWatch is one item's subscription and its waiters.
type itemWatch struct {
	ready   chan struct{} // closed once subscribed, or the subscribe failed
	ok      bool          // subscribed (read after ready)
	sub     *StatusSubscription
	waiters map[string]map[*waiter]struct{}
	refs    int
	stopped bool // no waiter left: the subscription goes
}

// waiter is one waiting poll.
type waiter struct {
	item bucketKey
	rid  string
	w    *itemWatch
	wake chan struct{} // buffered 1: a wake is never lost, never blocks
}

func newStatusWaits(st *Store, max int, subTimeout time.Duration, log *slog.Logger) *statusWaits {
	return &statusWaits{st: st, max: max, log: log, subTO: subTimeout,
		items: map[bucketKey]*itemWatch{}, done: make(chan struct{})}
}

// acquire registers a waiter for rid of item, subscribing to item's channel
// if no poll waits on it yet. nil means no room (the bound, or shutting
// down): answer at once. Register BEFORE the status is read again, so an
// announcement between that read and the wait is not lost.
func (s *statusWaits) acquire(itemID int64, rid string) *waiter {
	// Statuses are announced on the channel of the bucket the request was
	// admitted in (its own slot).
	item := bucketKey{ItemID: itemID, Bucket: reqid.Bucket(rid)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.n >= s.max {
		return nil
	}
	s.n++
	w := s.items[item]
	if w == nil {
		w = &itemWatch{ready: make(chan struct{}), waiters: map[string]map[*waiter]struct{}{}}
		s.items[item] = w
		go s.follow(item, w)
	}
	wt := &waiter{item: item, rid: rid, w: w, wake: make(chan struct{}, 1)}
	if w.waiters[rid] == nil {
		w.waiters[rid] = map[*waiter]struct{}{}
	}
	w.waiters[rid][wt] = struct{}{}
	w.refs++
	return wt
}

// release unregisters wt; the last waiter of an item closes its
// subscription.
func (s *statusWaits) release(wt *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n--
	w := wt.w
	delete(w.waiters[wt.rid], wt)
	if len(w.waiters[wt.rid]) == 0 {
		delete(w.waiters, wt.rid)
	}
	w.refs--
	if w.refs > 0 {
		return
	}
	w.stopped = true
	if s.items[wt.item] == w {
		delete(s.items, wt.item)
	}
	if w.sub != nil {
		_ = w.sub.Close() // follow's Next returns
	}
}

// follow subscribes to item and wakes its waiters until the last one left.
func (s *statusWaits) follow(item bucketKey, w *itemWatch) {
	ctx, cancel := context.WithTimeout(context.Background(), s.subTO)
	sub, err := s.st.SubscribeStatuses(ctx, item.ItemID, item.Bucket)
	cancel()
	s.mu.Lock()
	if err != nil {
		// The waiters answer what they read; the next poll tries again.
		s.log.Warn("status wait: subscribe failed", "item", item.ItemID, "bucket", item.Bucket, "err", err)
		if s.items[item] == w {
			delete(s.items, item)
		}
		s.mu.Unlock()
		close(w.ready)
		return
	}
	if w.stopped {
		s.mu.Unlock()
		_ = sub.Close()
		close(w.ready)
		return
	}
	w.sub, w.ok = sub, true
	s.mu.Unlock()
	close(w.ready)
	for {
		rid, gap, err := sub.Next(context.Background())
		s.mu.Lock()
		if err != nil || w.stopped {
			s.mu.Unlock()
			return
		}
		if gap {
			for _, ws := range w.waiters {
				wakeAll(ws)
			}
		} else {
			wakeAll(w.waiters[rid])
		}
		s.mu.Unlock()
	}
}

func wakeAll(ws map[*waiter]struct{}) {
	for wt := range ws {
		select {
		case wt.wake <- struct{}{}:
		default:
		}
	}
}

// stop makes every waiting poll answer now and refuses new waits (server
// shutdown: http.Server.Shutdown waits for in-flight requests).
func (s *statusWaits) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
}

// waiting is the number of polls waiting now (tests, metrics).
func (s *statusWaits) waiting() (polls, items int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, len(s.items)
}

// RegisterWaitMetrics exports how many polls wait now (against
// FLASHSALE_STATUS_WAITERS) and how many item subscriptions serve them, as
// waiting reports them. NewReader registers them for its waits; it is
// exported so the metric-name check (deploy/metricnames_test.go) sees them.
func RegisterWaitMetrics(reg prometheus.Registerer, waiting func() (polls, items int)) {
	f := promauto.With(reg)
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flashsale_status_waiting_polls",
		Help: "Status polls waiting on ?wait= now; past FLASHSALE_STATUS_WAITERS they answer at once.",
	}, func() float64 { n, _ := waiting(); return float64(n) })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flashsale_status_subscriptions",
		Help: "Items whose status channel this ingress follows for its waiting polls.",
	}, func() float64 { _, n := waiting(); return float64(n) })
}
