package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrNotPayable is returned by PayOrder for an order of the user that is not
// UNPAID within its deadline (cancelled, or expired and not yet reaped).
var ErrNotPayable = errors.New("store: order not payable")

const payOrderCols = "id, request_id, user_id, item_id, qty, price_cents, status, created_at, expires_at, paid_at, cancelled_at"

// PayOrder marks the user's order of requestID paid with a CAS on status and
// deadline, judged by the database's clock (NOW(3)), the same clock the
// reaper uses: a pay after expires_at is refused even before the reaper ran,
// so pay and cancel can never both win (I6). Paying a PAID order again is a
// success (idempotent). ErrNotFound: no order of this user for requestID.
func PayOrder(ctx context.Context, q Querier, requestID string, userID int64) (Order, error) {
	res, err := q.ExecContext(ctx,
		"UPDATE orders SET status = 'PAID', paid_at = NOW(3) WHERE request_id = ? AND user_id = ? AND status = 'UNPAID' AND expires_at > NOW(3)",
		requestID, userID)
	if err != nil {
		return Order{}, fmt.Errorf("store: pay %s: %w", requestID, err)
	}
	if _, err := res.RowsAffected(); err != nil {
		return Order{}, fmt.Errorf("store: pay %s: %w", requestID, err)
	}
	o, err := OrderOfRequest(ctx, q, requestID)
	if err != nil {
		return Order{}, err
	}
	if o.UserID != userID {
		return Order{}, ErrNotFound // never tell one buyer about another's order
	}
	if o.Status != Paid {
		return o, fmt.Errorf("%w: %s is %s", ErrNotPayable, requestID, o.Status)
	}
	return o, nil
}

// OrderOfRequest reads the order made from requestID; ErrNotFound if none.
func OrderOfRequest(ctx context.Context, q Querier, requestID string) (Order, error) {
	var o Order
	var status string
	err := q.QueryRowContext(ctx, "SELECT "+payOrderCols+" FROM orders WHERE request_id = ?", requestID).Scan(
		&o.ID, &o.RequestID, &o.UserID, &o.ItemID, &o.Qty, &o.PriceCents, &status, &o.CreatedAt, &o.ExpiresAt, &o.PaidAt, &o.CancelledAt)
	if errors.Is(err, sql.ErrNoRows) {
		return o, ErrNotFound
	}
	if err != nil {
		return o, fmt.Errorf("store: order of %s: %w", requestID, err)
	}
	o.Status = OrderStatus(status)
	return o, nil
}

// OrderOfBuyer reads the order userID holds for itemID (any status: there is
// at most one, UNIQUE (user_id, item_id)); ErrNotFound if none.
func OrderOfBuyer(ctx context.Context, q Querier, userID, itemID int64) (Order, error) {
	var o Order
	var status string
	err := q.QueryRowContext(ctx, "SELECT "+payOrderCols+" FROM orders WHERE user_id = ? AND item_id = ?", userID, itemID).Scan(
		&o.ID, &o.RequestID, &o.UserID, &o.ItemID, &o.Qty, &o.PriceCents, &status, &o.CreatedAt, &o.ExpiresAt, &o.PaidAt, &o.CancelledAt)
	if errors.Is(err, sql.ErrNoRows) {
		return o, ErrNotFound
	}
	if err != nil {
		return o, fmt.Errorf("store: order of user %d item %d: %w", userID, itemID, err)
	}
	o.Status = OrderStatus(status)
	return o, nil
}
