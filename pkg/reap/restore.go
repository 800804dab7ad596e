package reap

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// reapplyRestores walks the restore records Redis has not confirmed (a
// previous pass crashed or lost Redis after the MySQL commit, or another
// replica is applying them right now: the per-order Lua guard makes the
// second application a no-op) and applies them.
func (r *Reaper) reapplyRestores(ctx context.Context) error {
	var after int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		cctx, cancel := r.callCtx(ctx, 1)
		orders, err := store.PendingRestores(cctx, r.db, after, r.cfg.BatchSize)
		cancel()
		if err != nil {
			return err
		}
		if len(orders) == 0 {
			return nil
		}
		r.log.Info("re-applying pending Redis restores", "count", len(orders))
		if err := r.applyRestores(ctx, orders); err != nil {
			return err
		}
		if len(orders) < r.cfg.BatchSize {
			return nil
		}
		after = orders[len(orders)-1].ID
	}
}

// applyRestores gives each cancelled order's qty back to Redis (once, by the
// order's guard key), caches its CANCELLED status, and then marks the
// restore records of those that got both. The status is part of the unit on
// purpose: a restore stays pending until the buyer's cached view says
// CANCELLED too, so a failed cache write is retried by the next pass instead
// of leaving a stale UNPAID answer.
//
// RestoreNoStock (Redis lost the item) counts as done: MySQL already holds
// the qty and the admin warm rebuilds Redis from MySQL.
//
// It stops handing out work at the first Redis error, so an outage costs one
// timeout per worker, not one per order.
func (r *Reaper) applyRestores(ctx context.Context, orders []store.Order) error {
	var (
		mu     sync.Mutex
		done   = make([]int64, 0, len(orders))
		errs   []error
		failed atomic.Bool
		next   atomic.Int64
		wg     sync.WaitGroup
	)
	workers := min(r.cfg.RestoreWorkers, len(orders))
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= len(orders) {
					return
				}
				o := orders[i]
				if err := r.restoreOne(ctx, o); err != nil {
					failed.Store(true)
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				mu.Lock()
				done = append(done, o.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(done) > 0 {
		cctx, cancel := r.callCtx(ctx, 1)
		err := store.MarkRestoresApplied(cctx, r.db, done)
		cancel()
		if err != nil {
			// The Redis side is done and guarded; the next pass re-applies as
			// no-ops and marks again.
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Reaper) restoreOne(ctx context.Context, o store.Order) error {
	cctx, cancel := r.callCtx(ctx, 2)
	defer cancel()
	res, err := r.stock.Restore(cctx, o.ItemID, o.ID, o.Qty)
	if err != nil {
		return fmt.Errorf("restore order %d: %w", o.ID, err)
	}
	switch res {
	case stock.RestoreApplied:
		r.m.RestoresRedis.Inc()
	case stock.RestoreNoStock:
		r.log.Warn("Redis has no stock for item; restore left to warm from MySQL", "item_id", o.ItemID, "order_id", o.ID)
	}
	o.Status = store.Cancelled
	if err := orderstatus.Put(cctx, r.stock, orderstatus.FromOrder(o)); err != nil {
		return fmt.Errorf("cache status of order %d: %w", o.ID, err)
	}
	return nil
}
