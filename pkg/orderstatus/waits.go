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
// subscription per item bucket that has waiting polls, shared by all of
// them, and a map request id -> waiters that an announcement wakes.
// status_put.lua announces every status it stores with the status itself,
// so a woken poll answers from the message; a message without one (the
// pay's in-doubt marker) or a subscription gap makes it read again, from
// Redis like any poll. Nothing is held while a poll waits but a goroutine
// and its HTTP connection, never a MySQL connection.
//
// The number of waiting polls is bounded (FLASHSALE_STATUS_WAITERS), and so
// is the number of subscriptions, one per item bucket with a waiter. A
// subscription outlives its last waiter by linger (statusLinger), so the
// next poll of the bucket finds it up: it joins it before its first read,
// and neither subscribes nor reads again after subscribing (Reader.Poll).
type statusWaits struct {
	st     *Store
	max    int
	log    *slog.Logger
	subTO  time.Duration // bounds one subscribe
	linger time.Duration // how long a subscription outlives its last waiter

	mu     sync.Mutex
	n      int                      // waiting polls
	items  map[bucketKey]*itemWatch // one per bucket of an item
	closed bool
	done   chan struct{} // closed by stop: every waiter answers now
}

// statusLinger is how long an item bucket's subscription stays after its
// last waiting poll answered. During a sale the polls of a bucket follow
// each other closely, and a subscription kept between them saves each poll
// a subscribe and a read (two of the three Redis reads a long poll made);
// an idle subscription costs a connection and the messages of its bucket.
const statusLinger = 10 * time.Second

// bucketKey names one bucket of an item: a status is announced on the
// channel of the bucket its request was admitted in.
type bucketKey struct {
	ItemID int64
	Bucket int
}

// itemWatch is one item bucket's subscription and its waiters.
type itemWatch struct {
	ready   chan struct{} // closed once subscribed, or the subscribe failed
	ok      bool          // subscribed (read after ready)
	sub     *StatusSubscription
	waiters map[string]map[*waiter]struct{}
	refs    int
	idle    int  // counts the times refs fell to 0: the linger's generation
	stopped bool // no waiter left and the linger over: the subscription goes
}

// subscribed reports whether w's subscription is confirmed: an
// announcement made from now on reaches its waiters.
func (w *itemWatch) subscribed() bool {
	select {
	case <-w.ready:
		return w.ok
	default:
		return false
	}
}

// waiter is one waiting poll.
type waiter struct {
	item bucketKey
	rid  string
	w    *itemWatch
	// wake hears the announcements of rid: the status they carry, or nil
	// to read again (a gap, or a message without a status). Buffered 1 and
	// holding the latest only: a wake is never lost, never blocks, and a
	// newer status replaces one not yet taken (statuses of a request only
	// move forward).
	wake chan []byte
}

func newStatusWaits(st *Store, max int, subTimeout time.Duration, log *slog.Logger) *statusWaits {
	return &statusWaits{st: st, max: max, log: log, subTO: subTimeout, linger: statusLinger,
		items: map[bucketKey]*itemWatch{}, done: make(chan struct{})}
}

// acquire registers a waiter for rid of item, subscribing to its bucket's
// channel if nothing follows it yet. nil means no room (the bound, or
// shutting down): answer at once. Register BEFORE the status is read again,
// so an announcement between that read and the wait is not lost.
func (s *statusWaits) acquire(itemID int64, rid string) *waiter {
	return s.register(itemID, rid, true)
}

// join is acquire for a bucket whose subscription already exists (a
// waiting poll's, or one lingering after its last), nil otherwise: a poll
// joins before its first read, and only a request found pending subscribes
// (acquire), so made-up request ids cannot open subscriptions.
func (s *statusWaits) join(itemID int64, rid string) *waiter {
	return s.register(itemID, rid, false)
}

func (s *statusWaits) register(itemID int64, rid string, subscribe bool) *waiter {
	// Statuses are announced on the channel of the bucket the request was
	// admitted in (its own slot).
	item := bucketKey{ItemID: itemID, Bucket: reqid.Bucket(rid)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.n >= s.max {
		return nil
	}
	w := s.items[item]
	if w == nil {
		if !subscribe {
			return nil
		}
		w = &itemWatch{ready: make(chan struct{}), waiters: map[string]map[*waiter]struct{}{}}
		s.items[item] = w
		go s.follow(item, w)
	}
	s.n++
	wt := &waiter{item: item, rid: rid, w: w, wake: make(chan []byte, 1)}
	if w.waiters[rid] == nil {
		w.waiters[rid] = map[*waiter]struct{}{}
	}
	w.waiters[rid][wt] = struct{}{}
	w.refs++
	return wt
}

// release unregisters wt; after the last waiter of a bucket its
// subscription lingers, then goes (drop).
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
	if s.closed || s.linger <= 0 {
		s.drop(wt.item, w)
		return
	}
	w.idle++
	gen := w.idle
	time.AfterFunc(s.linger, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.refs == 0 && w.idle == gen {
			s.drop(wt.item, w)
		}
	})
}

// drop ends the subscription of item's bucket, w, which has no waiter.
// Called with s.mu held.
func (s *statusWaits) drop(item bucketKey, w *itemWatch) {
	w.stopped = true
	if s.items[item] == w {
		delete(s.items, item)
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
		a, gap, err := sub.Next(context.Background())
		s.mu.Lock()
		if err != nil || w.stopped {
			s.mu.Unlock()
			return
		}
		if gap {
			for _, ws := range w.waiters {
				wakeAll(ws, nil)
			}
		} else {
			wakeAll(w.waiters[a.RequestID], a.Status)
		}
		s.mu.Unlock()
	}
}

// wakeAll hands status (nil: read again) to the waiters ws, replacing one
// not yet taken. Called with s.mu held: follow, the one sender of a
// waiter's wake, holds it, so the send after emptying the buffer cannot
// block.
func wakeAll(ws map[*waiter]struct{}, status []byte) {
	for wt := range ws {
		select {
		case wt.wake <- status:
		default:
			select {
			case <-wt.wake:
			default:
			}
			wt.wake <- status
		}
	}
}

// stop makes every waiting poll answer now, refuses new waits and ends the
// lingering subscriptions (server shutdown: http.Server.Shutdown waits for
// in-flight requests); a waited-on subscription ends with its last waiter.
func (s *statusWaits) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.done)
	for item, w := range s.items {
		if w.refs == 0 {
			s.drop(item, w)
		}
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
