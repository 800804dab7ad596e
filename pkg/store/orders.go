package store

import (
	"database/sql"
	"time"
)

var errNoRows = sql.ErrNoRows

// OrderStatus is an order's lifecycle state.
type OrderStatus string

// Order statuses. UNPAID -> PAID or UNPAID -> CANCELLED, never both (I6).
const (
	Unpaid    OrderStatus = "UNPAID"
	Paid      OrderStatus = "PAID"
	Cancelled OrderStatus = "CANCELLED"
)

// Order is one row of orders.
type Order struct {
	ID         int64
	RequestID  string
	UserID     int64
	ItemID     int64
	Qty        int
	PriceCents int64
	// Bucket is the stock bucket the order took its qty from (for a
	// restore record: the bucket the qty went back to).
	Bucket      int
	Status      OrderStatus
	CreatedAt   time.Time
	ExpiresAt   time.Time
	PaidAt      *time.Time
	CancelledAt *time.Time
}
