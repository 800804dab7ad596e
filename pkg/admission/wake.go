package admission

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// wakeEvery is the least time between two wakes of the rebalancer for one
// item, and between two raisings of one bucket's want flag, from one
// ingress: a burst of waiting buyers costs one PUBLISH per item and one
// SET per bucket per wakeEvery, and a buyer who starts waiting right after
// a wake is served by the pass that wake started.
const wakeEvery = 20 * time.Millisecond

// wakes asks the rebalancer for the buckets whose buyers wait (awaitStock),
// off the buyer's path and best effort (a lost call leaves the rebalancer's
// own interval, and the buyer's next look tries again):
//
//   - It keeps the home bucket's want flag up, and no higher than this
//     buyer's qty (stock.Store.LowerWant, want_lower.lua). The script raised it when the buyer was
//     refused, but transfer_in.lua clears it when a transfer fills the
//     bucket to that qty, and when another waiter takes the unit the one
//     left waiting never runs the script again (the shared view shows the
//     bucket empty): nothing asked for the bucket, and the buyer got 503
//     stock_moving after the full wait while units sat elsewhere. And a
//     bigger buyer refused in the same bucket raises the flag to their qty
//     (the script's SET): when the item holds less than that, and every
//     bucket holding stock wants too, the policy can serve no flag and
//     plans nothing, so the buyer of 1 waiting there got 503 while units
//     remained. The flag names the smallest waiting buyer instead, which
//     the policy can always serve when the item covers it; the bigger one
//     raises it again on its next look once the small one is served.
//   - It names the item on stock.RebalanceWake, so the want is planned
//     within a pass's time, not after the rebalancer's interval (100 ms by
//     default) plus its item list's age (a new item was listed up to 2 s
//     late, longer than the bucket wait).
type wakes struct {
	st      *stock.Store
	timeout time.Duration
	mu      sync.Mutex
	items   map[int64]time.Time
	buckets map[[2]int64]time.Time
}

func newWakes(st *stock.Store, timeout time.Duration) *wakes {
	if timeout <= 0 {
		timeout = time.Second
	}
	return &wakes{st: st, timeout: timeout, items: map[int64]time.Time{}, buckets: map[[2]int64]time.Time{}}
}

// wake asks for qty in item's bucket, and wakes the rebalancer, unless this
// process did either within wakeEvery.
func (w *wakes) wake(item int64, bucket, qty int) {
	now := time.Now()
	b := [2]int64{item, int64(bucket)}
	w.mu.Lock()
	flag, publish := due(w.buckets, b, now), due(w.items, item, now)
	w.mu.Unlock()
	if !flag && !publish {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		defer cancel()
		c := w.st.Client()
		if flag {
			_ = w.st.LowerWant(ctx, item, bucket, qty)
		}
		if publish {
			_ = c.Publish(ctx, stock.RebalanceWake(), strconv.FormatInt(item, 10)).Err()
		}
	}()
}

// due reports whether k was last done wakeEvery ago or more, and if so
// records now (the caller holds the lock); it forgets old keys as it goes.
func due[K comparable](last map[K]time.Time, k K, now time.Time) bool {
	if now.Sub(last[k]) < wakeEvery {
		return false
	}
	last[k] = now
	if len(last) > 10_000 {
		for key, at := range last {
			if now.Sub(at) >= wakeEvery {
				delete(last, key)
			}
		}
	}
	return true
}
