package waitroom

import (
	"sync"
	"time"
)

// The wait estimate's rate is the one the gate is seen admitting at, not
// only the item's queue_rate. The two part ways: the gate holds an item
// while its pipeline is full (FLASHSALE_QUEUE_MAX_IN_FLIGHT: it then admits
// at what the consumers commit, below queue_rate), and after a gap with no
// gate it spends up to a second of credit at once (gate_advance.lua). This
// replica's reader of the item's gate (admitWatch, every 100 ms while polls
// wait) is what sees it move: each read is an observation, and the rate is
// the positions admitted over the time observed in the last rateWindow.
//
// Only time the gate could move counts. It stands still, and says nothing
// of its rate, before it first moves (the sale not started, its first
// round not closed yet), when every ticket taken is admitted, and at the
// end of the closed rounds while the next round is open (gate_advance.lua's
// bound): those stretches are left out (gateFree), not taken for a rate of
// 0. What is left is bounded: never above queue_rate, which the gate never
// exceeds for long (a burst of credit is spent once and does not come
// again), and never below a tenth of it, so a gate held for the whole
// window (MySQL stalled) makes the estimate ten times the configured one,
// not infinite. Over a window of some 30 reads, one read that came late or
// one pass the gate held moves the rate by a thirtieth.
const (
	// rateWindow is how far back the observed rate looks: long enough
	// that one read weighs a thirtieth and the gate's passes (whole
	// tickets every 100 ms) a few per cent, short enough that a hold of
	// the gate shows within a few seconds.
	rateWindow = 3 * time.Second
	// rateMinSpan is how much time with the gate free to move must be
	// observed in the window before its rate is used instead of
	// queue_rate: over less, a pass more or less is 10% and more.
	rateMinSpan = time.Second
	// rateFloorDiv: the observed rate is never taken below queue_rate /
	// rateFloorDiv.
	rateFloorDiv = 10
)

// rateObs is one read of the gate.
type rateObs struct {
	at      time.Time
	serving int64
	free    bool // the gate could move on from here (gateFree)
	started bool // the gate had been seen moving by this read
}

// admitRate is one item's gate as read over the last rateWindow. Not safe
// for concurrent use: admitRates guards it.
type admitRate struct {
	obs     []rateObs // oldest first
	started bool
}

// observe notes a read at at that saw the gate at serving, free (gateFree)
// or not. Reads out of order are dropped; a serving position that went
// back (the item's gate state built again) starts the observations over.
func (a *admitRate) observe(at time.Time, serving int64, free bool) {
	if n := len(a.obs); n > 0 {
		last := a.obs[n-1]
		switch {
		case !at.After(last.at):
			return
		case serving < last.serving:
			a.obs, a.started = a.obs[:0], false
		case serving > last.serving:
			a.started = true
		}
	}
	a.obs = append(a.obs, rateObs{at: at, serving: serving, free: free, started: a.started})
	cut := 0
	for cut < len(a.obs)-1 && at.Sub(a.obs[cut].at) > rateWindow {
		cut++
	}
	if cut > 0 {
		a.obs = append(a.obs[:0], a.obs[cut:]...)
	}
}

// rate is the gate's admissions a second at at, as observed, for an item
// whose queue_rate is configured: configured until rateMinSpan of the gate
// free to move has been seen within rateWindow, and bounded by
// [configured/rateFloorDiv, configured]. An interval between two reads
// counts when the gate had been seen moving before it and was free at both
// ends: one that reached a bound may have stood for part of it.
func (a *admitRate) rate(at time.Time, configured int) float64 {
	c := float64(max(configured, 1))
	var span time.Duration
	var moved int64
	for i := 1; i < len(a.obs); i++ {
		p, q := a.obs[i-1], a.obs[i]
		if at.Sub(p.at) > rateWindow || !p.started || !p.free || !q.free {
			continue
		}
		span += q.at.Sub(p.at)
		moved += q.serving - p.serving
	}
	if span < rateMinSpan {
		return c
	}
	return min(max(float64(moved)/span.Seconds(), c/rateFloorDiv), c)
}

// gateFree reports whether the gate, read at serving with tickets taken,
// could move on: it stops at the last ticket taken and, while a round of
// the shuffle window is open, at the closed rounds' last position (bound,
// when boundOK; a bound below serving is an old one, read before a later
// round closed).
func gateFree(serving, tickets, bound int64, boundOK bool) bool {
	return serving < tickets && (!boundOK || serving != bound)
}

// admitRates is the observed rate of every item this replica's readers
// read, kept across readers (a reader stops with its last poll; the next
// one's reads join the same window).
type admitRates struct {
	// now is the clock the reads are timed by (time.Now; a test's own).
	now func() time.Time
	// bound is item id's closed rounds' last position while a round is
	// open, as this replica last drew its order (Positions.Bound).
	bound func(id int64) (int64, bool)

	mu sync.Mutex
	m  map[int64]*admitRate
}

func newAdmitRates(bound func(int64) (int64, bool)) *admitRates {
	return &admitRates{now: time.Now, bound: bound, m: map[int64]*admitRate{}}
}

// observe notes a read of item id's gate: serving, with tickets taken.
func (r *admitRates) observe(id, serving, tickets int64) {
	b, ok := r.bound(id)
	free := gateFree(serving, tickets, b, ok)
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.m[id]
	if a == nil {
		if len(r.m) >= 10_000 {
			r.m = map[int64]*admitRate{} // items come and go; a lost window is a second of queue_rate
		}
		a = &admitRate{}
		r.m[id] = a
	}
	a.observe(at, serving, free)
}

// rate is item id's admissions a second now, its queue_rate configured
// (admitRate.rate).
func (r *admitRates) rate(id int64, configured int) float64 {
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := r.m[id]; a != nil {
		return a.rate(at, configured)
	}
	return float64(max(configured, 1))
}
