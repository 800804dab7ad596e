package rebalance

import (
	"context"
	"strconv"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// A buyer who finds their home bucket short raises its want flag, and the
// ingress names the item on stock.RebalanceWake (pkg/admission, wake.go).
// Run passes on that at once: the want is planned within a pass's time,
// not after up to Interval (100 ms by default), and an item created since
// the list was read (itemsTTL, 2 s: longer than the ingress's 1 s bucket
// wait) is listed at once. The wake only makes passes sooner; the interval
// still runs, so a lost message costs latency, never a move.

// minPassGap is the least time between two passes started by wakes: a
// stream of waiting buyers makes passes back to back, each a few store
// calls per item, but leaves the stores room between them.
const minPassGap = 5 * time.Millisecond

// listen subscribes to stock.RebalanceWake and returns the items named on
// it. One wake is kept while a pass runs (the channel's buffer), so a wake
// during a pass starts the next; more are dropped, that pass serves them
// too. When the subscription fails, Run keeps its interval.
func (r *Rebalancer) listen(ctx context.Context) <-chan int64 {
	woken := make(chan int64, 1)
	sub := r.rdb.Subscribe(ctx, stock.RebalanceWake())
	go func() {
		defer sub.Close()
		ch := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case msg, ok := <-ch:
				if !ok {
					return
				}
				id, err := strconv.ParseInt(msg.Payload, 10, 64)
				if err != nil {
					continue
				}
				select {
				case woken <- id:
				default:
				}
			}
		}
	}()
	return woken
}

// listed reports whether the item list holds item.
func (r *Rebalancer) listed(item int64) bool {
	for _, it := range r.items {
		if it.ID == item {
			return true
		}
	}
	return false
}
