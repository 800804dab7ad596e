package main

import (
	"context"
	"fmt"
	"sync"
)

// saleItems picks the ids of a sale spread over n items: -item (or a fresh
// random id) and the ids after it, so a many-item run needs one flag.
func saleItems(first int64, n int) []int64 {
	if first == 0 {
		first = newItemID()
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = first + int64(i)
	}
	return ids
}

// splitUnits shares units over n items as evenly as they go: item i gets
// units/n, and one more while i < units mod n.
func splitUnits(units, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = units / n
		if i < units%n {
			out[i]++
		}
	}
	return out
}

// itemOf is the item buyer b orders: b mod the item count, so each item
// has its share of the buyers as it has its share of the units.
func itemOf(buyer, items int) int { return buyer % items }

// createItems creates every item of the sale, eight at a time.
func createItems(ctx context.Context, api *API, ids []int64, units []int, buckets int) error {
	return forItems(ctx, ids, func(ctx context.Context, i int) error {
		if err := api.CreateItem(ctx, ids[i], units[i], buckets); err != nil {
			return fmt.Errorf("create item %d: %w", ids[i], err)
		}
		return nil
	})
}

// endItems ends every item's sale, eight at a time.
func endItems(ctx context.Context, api *API, ids []int64) error {
	return forItems(ctx, ids, func(ctx context.Context, i int) error {
		if err := api.EndSale(ctx, ids[i]); err != nil {
			return fmt.Errorf("end item %d: %w", ids[i], err)
		}
		return nil
	})
}

// auditItems reads every item's audit and adds them up: the sale's books
// balance when each item's do, and a violation names its item. One item's
// audit is returned as it came.
func auditItems(ctx context.Context, api *API, ids []int64) (Audit, error) {
	if len(ids) == 1 {
		return api.Audit(ctx, ids[0])
	}
	audits := make([]Audit, len(ids))
	err := forItems(ctx, ids, func(ctx context.Context, i int) error {
		a, err := api.Audit(ctx, ids[i])
		if err != nil {
			return fmt.Errorf("item %d: %w", ids[i], err)
		}
		audits[i] = a
		return nil
	})
	if err != nil {
		return Audit{}, err
	}
	return sumAudits(ids[0], audits), nil
}

// sumAudits adds per-item audits into one for the report.
func sumAudits(first int64, audits []Audit) Audit {
	sum := Audit{ItemID: first, OK: true, Violations: []string{}}
	for _, a := range audits {
		sum.Total += a.Total
		sum.RedisStock += a.RedisStock
		sum.DBStock += a.DBStock
		sum.Pending += a.Pending
		sum.PendingQty += a.PendingQty
		sum.Unpaid += a.Unpaid
		sum.Paid += a.Paid
		sum.Cancelled += a.Cancelled
		sum.Rejected += a.Rejected
		sum.OK = sum.OK && a.OK
		for _, v := range a.Violations {
			sum.Violations = append(sum.Violations, fmt.Sprintf("item %d: %s", a.ItemID, v))
		}
	}
	return sum
}

// forItems runs f for every index of ids, eight at a time, and returns the
// first error.
func forItems(ctx context.Context, ids []int64, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(8, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := range ids {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
