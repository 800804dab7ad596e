package reap

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
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
		more, err := r.cancelBatch(ctx)
		if err != nil || !more {
			return err
		}
	}
}

// cancelBatch claims and cancels one batch of expired orders and restores
// their stock, as one span (SpanCancel, with the count cancelled: 0 for
// the last, empty claim of a pass); more reports a full batch (there may be
// more to claim).
func (r *Reaper) cancelBatch(ctx context.Context) (more bool, err error) {
	ctx, span := tracing.Start(ctx, SpanCancel, trace.SpanKindInternal)
	n := 0
	defer func() {
		if span.IsRecording() {
			span.SetAttributes(attribute.Int("flashsale.cancelled", n))
			tracing.Fail(span, err)
		}
		span.End()
	}()
	cctx, cancel := r.callCtx(ctx, txCalls)
	orders, err := retryTx(cctx, func() ([]store.Order, error) {
		return store.CancelExpired(cctx, r.db, r.cfg.BatchSize)
	})
	cancel()
	if err != nil {
		return false, err
	}
	n = len(orders)
	if n == 0 {
		return false, nil
	}
	r.m.Cancellations.Add(float64(len(orders)))
	r.m.RestoresMySQL.Add(float64(len(orders)))
	r.log.DebugContext(ctx, "cancelled expired orders", "count", len(orders))
	if r.AfterCommit != nil {
		if err := r.AfterCommit(ctx, orders); err != nil {
			return false, fmt.Errorf("after commit of %d cancellations: %w", len(orders), err)
		}
	}
	if err := r.applyRestores(ctx, orders); err != nil {
		return false, err
	}
	return len(orders) >= r.cfg.BatchSize, nil
}
