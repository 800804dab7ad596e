package admission

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// compensation is the Redis side of one ABORTED request: its cached status
// and the release of its hold.
type compensation struct {
	item  int64
	rid   string
	view  orderstatus.View
	opts  stock.ReleaseOptions
	since time.Time
}

// Bounds of the background retry. Past them the reaper's orphan sweep
// releases the hold (it finds the reservation, loses the arbiter race to
// ABORTED and compensates as ABORTED says), only later: after the grace.
const (
	maxPendingCompensations = 10_000
	compensationRetryEvery  = time.Second
	compensationGiveUpAfter = 5 * time.Minute
)

// retryQueue retries compensations that failed because Redis was failing,
// so that a buyer whose admission was aborted during a Redis blip gets their
// hold back within seconds of Redis recovering, not after the orphan grace.
// One goroutine runs while the queue is not empty; a process that dies with
// entries in it leaves them to the orphan sweep.
type retryQueue struct {
	mu      sync.Mutex
	pending []compensation
	running bool
	run     func(context.Context, compensation) error
	log     *slog.Logger
}

func (q *retryQueue) add(c compensation) {
	c.since = time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) >= maxPendingCompensations {
		q.log.Warn("admission: compensation queue full; leaving the hold to the orphan sweep", "request_id", c.rid)
		return
	}
	q.pending = append(q.pending, c)
	if !q.running {
		q.running = true
		go q.loop()
	}
}

func (q *retryQueue) loop() {
	for {
		time.Sleep(compensationRetryEvery)
		q.mu.Lock()
		batch := q.pending
		q.pending = nil
		q.mu.Unlock()
		var keep []compensation
		for _, c := range batch {
			err := q.run(context.Background(), c)
			switch {
			case err == nil:
				q.log.Info("admission: aborted reservation released", "request_id", c.rid, "after", time.Since(c.since).Round(time.Millisecond).String())
			case time.Since(c.since) > compensationGiveUpAfter:
				q.log.Warn("admission: giving up releasing an aborted reservation; the orphan sweep will", "request_id", c.rid, "err", err)
			default:
				keep = append(keep, c)
			}
		}
		q.mu.Lock()
		q.pending = append(keep, q.pending...)
		if len(q.pending) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
	}
}

// size is the number of compensations waiting (tests, metrics).
func (q *retryQueue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}
