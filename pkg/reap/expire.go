package reap

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// cancelExpired cancels expired UNPAID orders batch by batch until a batch
// comes back short (nothing left, or the rest is locked by another replica
// or a pay in flight). Each batch is committed in MySQL first (cancel, stock,
// restore records), then its Redis restores are applied and marked; if the
// Redis side fails, the restore records make the next pass finish it.
func (r *Reaper) cancelExpired(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		cctx, cancel := r.callCtx(ctx, txCalls)
		orders, err := retryTx(cctx, func() ([]store.Order, error) {
			return store.CancelExpired(cctx, r.db, r.cfg.BatchSize)
		})
		cancel()
		if err != nil {
			return err
		}
		if len(orders) == 0 {
			return nil
		}
		r.m.Cancellations.Add(float64(len(orders)))
		r.m.RestoresMySQL.Add(float64(len(orders)))
		r.log.Debug("cancelled expired orders", "count", len(orders))
		if r.AfterCommit != nil {
			if err := r.AfterCommit(ctx, orders); err != nil {
				return fmt.Errorf("after commit of %d cancellations: %w", len(orders), err)
			}
		}
		if err := r.applyRestores(ctx, orders); err != nil {
			return err
		}
		if len(orders) < r.cfg.BatchSize {
			return nil
		}
	}
}
