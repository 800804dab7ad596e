package orderwriter

import (
	"context"
	"fmt"
	"sync"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// afterCommit applies an item's committed decisions to Redis: settle the
// reservations of orders, release those of rejections, and cache every
// terminal status. Every step is idempotent (the reservation is the guard;
// the status cache never moves backwards), so the whole step is simply
// repeated until it succeeds, and a redelivered batch replays it.
type afterCommit struct {
	stock   *stock.Store
	workers int
}

func releaseOptions(reason string) (stock.ReleaseOptions, bool) {
	switch reason {
	case store.ReasonSoldOut:
		// MySQL has no stock to match it: do not give it back to Redis, but
		// let the buyer try again (stock may come back on cancellation).
		return stock.ReleaseOptions{RemoveBuyer: true}, true
	case store.ReasonDuplicateBuyer:
		// The buyer does own an order: keep the mark, return the extra unit.
		return stock.ReleaseOptions{ReturnStock: true}, true
	}
	return stock.ReleaseOptions{}, false
}

func (a *afterCommit) apply(ctx context.Context, r ItemResult) error {
	if len(r.Ordered) > 0 {
		ids := make([]string, len(r.Ordered))
		for i, o := range r.Ordered {
			ids[i] = o.RequestID
		}
		if err := a.stock.Settle(ctx, r.ItemID, ids); err != nil {
			return err
		}
	}
	jobs := make(chan func() error)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range max(1, a.workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if err := j(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	send := func(j func() error) bool {
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	func() {
		defer close(jobs)
		for _, d := range r.Rejected {
			if !send(func() error {
				if o, ok := releaseOptions(d.Reason); ok {
					if _, err := a.stock.Release(ctx, r.ItemID, d.RequestID, o); err != nil {
						return err
					}
				}
				return orderstatus.Put(ctx, a.stock, orderstatus.FromDecision(d))
			}) {
				return
			}
		}
		for _, o := range r.Ordered {
			if !send(func() error { return orderstatus.Put(ctx, a.stock, orderstatus.FromOrder(o)) }) {
				return
			}
		}
	}()
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("orderwriter: redis after commit of item %d (%d failures): %w", r.ItemID, len(errs), errs[0])
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("orderwriter: redis after commit of item %d: %w", r.ItemID, err)
	}
	return nil
}
