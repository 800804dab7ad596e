package store

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// PendingRestores returns the cancelled orders whose restore Redis has not
// confirmed yet (stock_restores.redis_applied_at IS NULL), up to limit, with
// order id above afterOrderID, in order id order (keyset paging: a restore the
// caller fails to apply is not returned again in the same walk).
func PendingRestores(ctx context.Context, q Querier, afterOrderID int64, limit int) ([]Order, error) {
	out, err := sqlrows.List(ctx, q,
		"SELECT r.order_id, r.item_id, r.bucket, r.qty, o.request_id, o.user_id, o.price_cents, o.created_at, o.expires_at"+
			" FROM stock_restores r JOIN orders o ON o.id = r.order_id"+
			" WHERE r.redis_applied_at IS NULL AND r.order_id > ? ORDER BY r.order_id LIMIT ?", []any{afterOrderID, limit},
		func(r sqlrows.Row) (Order, error) {
			o := Order{Status: Cancelled}
			err := r.Scan(&o.ID, &o.ItemID, &o.Bucket, &o.Qty, &o.RequestID, &o.UserID, &o.PriceCents, &o.CreatedAt, &o.ExpiresAt)
			return o, err
		})
	if err != nil {
		return nil, fmt.Errorf("store: pending restores: %w", err)
	}
	return out, nil
}

// MarkRestoresApplied records that Redis got these orders' qty back. Marking
// twice (two replicas re-applying the same restore) is harmless: the Redis
// side is guarded per request, and the first mark's time is kept. Only after
// it committed may the Redis guards get a TTL (stock.ExpireRestoreGuards).
func MarkRestoresApplied(ctx context.Context, q Querier, orderIDs []int64) error {
	if len(orderIDs) == 0 {
		return nil
	}
	args := make([]any, len(orderIDs))
	for i, id := range orderIDs {
		args[i] = id
	}
	_, err := q.ExecContext(ctx,
		"UPDATE stock_restores SET redis_applied_at = NOW(3) WHERE order_id IN ("+placeholders(len(args))+") AND redis_applied_at IS NULL",
		args...)
	if err != nil {
		return fmt.Errorf("store: mark restores applied: %w", err)
	}
	return nil
}
