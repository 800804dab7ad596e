package admission

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// wakeEvery is the least time between two wakes of the rebalancer for one
// item from one ingress: a burst of waiting buyers costs one PUBLISH per
// item per wakeEvery, and a buyer who starts waiting right after a wake is
// served by the pass that wake started.
const wakeEvery = 20 * time.Millisecond

// wakes tells the rebalancer, on stock.RebalanceWake, that a buyer of an
// item is waiting for a bucket's stock: the want flag the script raised is
// then planned within a pass's time, not after the rebalancer's interval
// (100 ms by default) plus its item list's age (a new item was listed up to
// 2 s late, longer than the bucket wait). Best effort and off the buyer's
// path: the publish runs in the background, and a lost one leaves the
// rebalancer's own interval.
type wakes struct {
	st      *stock.Store
	timeout time.Duration
	mu      sync.Mutex
	last    map[int64]time.Time
}

func newWakes(st *stock.Store, timeout time.Duration) *wakes {
	if timeout <= 0 {
		timeout = time.Second
	}
	return &wakes{st: st, timeout: timeout, last: map[int64]time.Time{}}
}

// wake publishes item's id unless this process did within wakeEvery.
func (w *wakes) wake(item int64) {
	now := time.Now()
	w.mu.Lock()
	if now.Sub(w.last[item]) < wakeEvery {
		w.mu.Unlock()
		return
	}
	w.last[item] = now
	if len(w.last) > 10_000 {
		for id, at := range w.last {
			if now.Sub(at) >= wakeEvery {
				delete(w.last, id)
			}
		}
	}
	w.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		defer cancel()
		_ = w.st.Client().Publish(ctx, stock.RebalanceWake, strconv.FormatInt(item, 10)).Err()
	}()
}
