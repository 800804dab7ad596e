package orderwriter

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Lag is watched two ways.
//
// The group's lag (flashsale_consumer_group_lag) is read from the broker's
// committed offsets by a loop of its own, independent of the write path: a
// round that retries a MySQL or Redis outage without bound commits nothing
// and fetches nothing, so only a reading from outside it can show the lag
// growing while the orphan grace runs out. Every member polls and exports
// the same group-wide series rather than one elected member: kafka-go tells
// a member neither who leads the group nor what it owns, and a lone exporter
// would go dark exactly when it is the one that died. Rules take
// max by (partition), which also ignores a member whose last poll is older.
//
// This member's lag as of its last fetch (flashsale_consumer_lag) is still
// set when a round ends, for the per-replica view. kafka-go's Reader has no
// revocation callback, so a partition not fetched for lagIdlePolls polls
// loses its series: it moved to another member (or is idle, where the lag
// is 0 anyway), and a frozen value would lie.
const (
	// lagIdlePolls is how many poll intervals a partition may go unfetched
	// before its per-fetch series is dropped (a minute by default).
	lagIdlePolls = 12
	// lagStalePolls is how many poll intervals the group series outlive a
	// broker that stopped answering: one failed poll must not reset an
	// alert's "for", but a broker outage must not show a frozen lag either.
	lagStalePolls = 4
)

// lagWatch polls the group's committed lag every interval. A poll runs in
// the loop's own goroutine under a deadline of one interval, so a stalled
// broker delays the next poll by at most that and never piles goroutines up.
type lagWatch struct {
	poll     func(context.Context) (map[int]int64, error)
	interval time.Duration
	m        *Metrics
	log      *slog.Logger
	// now is the clock the staleness of the last good poll and the idle
	// cut-off are judged by; nil is time.Now. A test moves it to age the
	// group series without waiting polls out.
	now func() time.Time

	lastOK time.Time
	parts  map[int]bool // partitions GroupLag has a series for
}

func (w *lagWatch) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

func (w *lagWatch) run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	w.lastOK = w.clock()
	for {
		w.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick drops per-fetch series of partitions idle for too long, then polls.
func (w *lagWatch) tick(ctx context.Context) {
	w.m.fetchLag.forgetIdle(w.clock().Add(-lagIdlePolls * w.interval))
	pctx, cancel := context.WithTimeout(ctx, w.interval)
	lag, err := w.poll(pctx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		w.m.LagPollFailures.Inc()
		w.log.Warn("poll group lag", "err", err)
		if w.clock().Sub(w.lastOK) > lagStalePolls*w.interval {
			w.m.GroupLag.Reset()
			w.parts = nil
		}
		return
	}
	w.lastOK = w.clock()
	for p := range w.parts {
		if _, ok := lag[p]; !ok {
			w.m.GroupLag.DeleteLabelValues(strconv.Itoa(p))
		}
	}
	w.parts = make(map[int]bool, len(lag))
	for p, l := range lag {
		w.m.GroupLag.WithLabelValues(strconv.Itoa(p)).Set(float64(l))
		w.parts[p] = true
	}
}

// partitionGauge is a per-partition gauge that remembers when each
// partition was last set, so series of partitions this member stopped
// fetching can be dropped.
type partitionGauge struct {
	vec  *prometheus.GaugeVec
	mu   sync.Mutex
	seen map[int]time.Time
	// now stamps each set; a test steps it to order sets without sleeping.
	now func() time.Time
}

func newPartitionGauge(vec *prometheus.GaugeVec) *partitionGauge {
	return &partitionGauge{vec: vec, seen: map[int]time.Time{}, now: time.Now}
}

func (g *partitionGauge) set(partition int, v float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seen[partition] = g.now()
	g.vec.WithLabelValues(strconv.Itoa(partition)).Set(v)
}

// forgetIdle deletes the series of partitions not set since before.
func (g *partitionGauge) forgetIdle(before time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, at := range g.seen {
		if at.Before(before) {
			g.vec.DeleteLabelValues(strconv.Itoa(p))
			delete(g.seen, p)
		}
	}
}
