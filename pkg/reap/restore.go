package reap

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// reapplyRestores walks the restore records Redis has not confirmed (a
// previous pass crashed or lost Redis after the MySQL commit, or another
// replica is applying them right now: the per-request Lua guard makes the
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
// guard key of its request id), caches its CANCELLED status, marks the
// restore records, and only then gives the guards a TTL. The status is part
// of the unit on purpose: a restore stays pending until the buyer's cached
// view says CANCELLED too, so a failed cache write is retried by the next
// pass instead of leaving a stale UNPAID answer.
//
// Both Redis steps are one pipelined round trip for the whole batch: Redis
// answers in microseconds, so per-order round trips, not Redis, bounded a
// big backlog. A Redis error leaves the whole batch pending; the guards make
// the next pass's repeat a no-op.
//
// RestoreNoStock (Redis lost the item) counts as done: MySQL already holds
// the qty and the admin warm rebuilds Redis from MySQL.
//
// The guards' lifetime follows the records. A guard has no TTL while its
// record is unmarked, however long that lasts (a reaper down for a week, a
// mark that keeps failing), so a later re-application is always a no-op.
// Once the mark committed, no reaper reads the record as pending any more;
// one that read it before (two replicas racing on the same page) sends its
// restore within a few store timeouts, long before MarkedGuardTTL (1h)
// ends, and finds the guard. A reaper that dies between the mark and the
// TTL leaves a guard without TTL: a few bytes, never a wrong answer, since
// request ids are never reused (a MySQL reset does not bring them back, as
// it does order ids).

func (r *Reaper) applyRestores(ctx context.Context, orders []store.Order) error {
	entries := make([]stock.RestoreEntry, len(orders))
	views := make([]orderstatus.View, len(orders))
	ids := make([]int64, len(orders))
	for i, o := range orders {
		entries[i] = stock.RestoreEntry{ItemID: o.ItemID, Bucket: o.Bucket, RequestID: o.RequestID, Qty: o.Qty}
		o.Status = store.Cancelled
		views[i] = orderstatus.FromOrder(o)
		ids[i] = o.ID
	}
	cctx, cancel := r.callCtx(ctx, 2)
	defer cancel()
	results, err := r.stock.RestoreMany(cctx, entries)
	if err != nil {
		return fmt.Errorf("restore %d orders: %w", len(orders), err)
	}
	for i, res := range results {
		switch res {
		case stock.RestoreApplied, stock.RestoreWaitlisted:
			r.m.RestoresRedis.Inc()
		case stock.RestoreNoStock:
			r.log.Warn("Redis has no stock for item; restore left to warm from MySQL",
				"item_id", orders[i].ItemID, "order_id", orders[i].ID)
		}
	}
	if err := orderstatus.PutMany(cctx, r.stock, views); err != nil {
		return fmt.Errorf("cache status of %d cancelled orders: %w", len(orders), err)
	}
	mctx, mcancel := r.callCtx(ctx, 1)
	defer mcancel()
	if err := store.MarkRestoresApplied(mctx, r.db, ids); err != nil {
		// The Redis side is done and guarded; the next pass re-applies as
		// no-ops and marks again.
		return err
	}
	ectx, ecancel := r.callCtx(ctx, 1)
	defer ecancel()
	if err := r.stock.ExpireRestoreGuards(ectx, entries); err != nil {
		// The records are marked, so no pass comes back for these guards:
		// they stay without TTL, which costs memory, not correctness.
		r.log.Warn("restore guards keep no TTL", "count", len(entries), "err", err)
	}
	return nil
}
