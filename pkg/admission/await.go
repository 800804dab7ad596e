package admission

import (
	"context"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// awaitStock handles a home bucket found short while the item has other
// buckets, keeping the bucket promise (promise.go). "Sold out" is answered
// only when no bucket has the qty, by a read that cannot miss units moving
// between buckets (bucketview.Snapshot). Otherwise the script already raised
// the bucket's want flag, the rebalancer moves stock here within a pass or
// two, and the admission is tried again (same request id: the script is
// idempotent per id) once the shared view of the buckets (bucketViews, read
// at most every BucketPoll) shows stock at home; at most until BucketWait. A
// wait that runs out answers StockMoving: nothing is reserved, try again.
func (s *Service) awaitStock(ctx context.Context, r Request, rid string, now time.Time, ar stock.AdmitResult) (stock.AdmitResult, time.Time, error) {
	start := s.now()
	result := "error"
	defer func() { s.m.bucketWaits.WithLabelValues(result).Observe(s.now().Sub(start).Seconds()) }()
	until := start.Add(s.cfg.BucketWait)
	var readErr error // the last look's, while no look has succeeded
	for {
		snap, err := s.views.get(ctx, r.ItemID, r.buckets, s.cfg.StoreTimeout)
		verdict := lookWait
		if err == nil {
			verdict = judge(snap, r.bucket, r.Qty)
		}
		switch {
		case err != nil:
			// A failed look is tried again within the wait (one slow read
			// shared by every waiter must not fail them all); only reads
			// failed, and the last script run reserved nothing.
			readErr = err
		case verdict == lookSoldOut:
			// Sold out for this buyer's qty (the bucket promise, clause 2);
			// StockLeft is what is left for the others, so the item is
			// marked sold out on this ingress only when nothing is left (a
			// buyer of 2 with 1 unit left must not turn every buyer of 1
			// away from memory: clause 3).
			result, ar.StockLeft = "sold_out", snap.Total()
			return ar, time.Time{}, nil
		case verdict == lookTryHome:
			// The looks of one wait are one attempt of the buyer's: the
			// first was counted against the per-user limit, these are not.
			var deadline time.Time
			ar, deadline, err = s.reserve(ctx, r, rid, now, 0)
			if err != nil || ar.Code != stock.SoldOut {
				if err == nil {
					result = "refilled"
				}
				return ar, deadline, err
			}
		}
		if err == nil {
			readErr = nil
			// This buyer waits: the rebalancer is told at once (wake.go).
			s.wakes.wake(r.ItemID, r.bucket, r.Qty)
		}
		if !s.now().Before(until) {
			if readErr != nil {
				return stock.AdmitResult{Code: stockUnreadable}, time.Time{}, nil
			}
			result = "timed_out"
			return stock.AdmitResult{Code: stockMoving}, time.Time{}, nil
		}
		t := time.NewTimer(s.cfg.BucketPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			result = "timed_out"
			return stock.AdmitResult{Code: stockMoving}, time.Time{}, nil
		case <-t.C:
		}
	}
}

// Verdicts of awaitStock that the script never gives.
const (
	stockMoving     stock.AdmitCode = "stock_moving"
	stockUnreadable stock.AdmitCode = "stock_unreadable"
)
