package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RequestState is what MySQL knows about one admitted request: the arbiter's
// decision and, for ORDERED, the order.
type RequestState struct {
	Decision Decision
	// Order is set when the decision is ORDERED and the order row exists.
	Order *Order
}

// RequestStatus reads the decision of requestID joined with its order, in one
// query; ErrNotFound while undecided. The status endpoint calls it only on a
// status-cache miss for a request no longer pending in Redis.
func RequestStatus(ctx context.Context, q Querier, requestID string) (RequestState, error) {
	var (
		st                   RequestState
		outcome              string
		reason               *string
		orderID              sql.NullInt64
		oStatus              sql.NullString
		oQty                 sql.NullInt64
		oPrice               sql.NullInt64
		oCreated, oExpires   sql.NullTime
		oPaidAt, oCancelledA *time.Time
	)
	d := &st.Decision
	err := q.QueryRowContext(ctx, `SELECT ro.request_id, ro.item_id, ro.user_id, ro.qty, ro.outcome, ro.reason, ro.decided_at,
	o.id, o.status, o.qty, o.price_cents, o.created_at, o.expires_at, o.paid_at, o.cancelled_at
FROM request_outcomes ro LEFT JOIN orders o ON o.request_id = ro.request_id
WHERE ro.request_id = ?`, requestID).Scan(
		&d.RequestID, &d.ItemID, &d.UserID, &d.Qty, &outcome, &reason, &d.DecidedAt,
		&orderID, &oStatus, &oQty, &oPrice, &oCreated, &oExpires, &oPaidAt, &oCancelledA)
	if errors.Is(err, sql.ErrNoRows) {
		return st, ErrNotFound
	}
	if err != nil {
		return st, fmt.Errorf("store: status of %s: %w", requestID, err)
	}
	d.Outcome = Outcome(outcome)
	if reason != nil {
		d.Reason = *reason
	}
	if orderID.Valid {
		st.Order = &Order{ID: orderID.Int64, RequestID: d.RequestID, UserID: d.UserID, ItemID: d.ItemID,
			Qty: int(oQty.Int64), PriceCents: oPrice.Int64, Status: OrderStatus(oStatus.String),
			CreatedAt: oCreated.Time, ExpiresAt: oExpires.Time, PaidAt: oPaidAt, CancelledAt: oCancelledA}
	}
	return st, nil
}
