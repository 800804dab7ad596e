package orderstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Buyer-visible statuses.
const (
	Pending   = "PENDING"
	Unpaid    = "UNPAID"
	Paid      = "PAID"
	Cancelled = "CANCELLED"
	Rejected  = "REJECTED"
)

// View is GET /api/v1/orders/{request_id}'s body. UserID is kept for the
// owner check and never serialised.
type View struct {
	RequestID string     `json:"request_id"`
	ItemID    int64      `json:"item_id"`
	Qty       int        `json:"qty"`
	Status    string     `json:"status"`
	OrderID   int64      `json:"order_id,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	UserID    int64      `json:"-"`
}

// cached is what the cache stores: the view plus its owner.
type cached struct {
	View
	Owner int64 `json:"owner"`
}

// rank orders statuses so the cache never moves backwards.
func rank(status string) StatusRank {
	if status == Unpaid || status == Pending {
		return RankUnpaid
	}
	return RankFinal
}

// FromOrder is the view of a request that became an order.
func FromOrder(o store.Order) View {
	exp := o.ExpiresAt.UTC()
	return View{RequestID: o.RequestID, ItemID: o.ItemID, Qty: o.Qty, Status: string(o.Status),
		OrderID: o.ID, ExpiresAt: &exp, UserID: o.UserID}
}

// FromDecision is the view of a request the arbiter refused (REJECTED,
// ABORTED, VOIDED all show as REJECTED with a reason).
func FromDecision(d store.Decision) View {
	return View{RequestID: d.RequestID, ItemID: d.ItemID, Qty: d.Qty, Status: Rejected, Reason: d.Reason, UserID: d.UserID}
}

// Put caches v (never replacing a newer status).
func Put(ctx context.Context, s *stock.Store, v View) error {
	b, err := json.Marshal(cached{View: v, Owner: v.UserID})
	if err != nil {
		return fmt.Errorf("orderstatus: encode: %w", err)
	}
	return NewStore(s).PutStatus(ctx, v.ItemID, v.RequestID, rank(v.Status), b)
}

// PutMany caches many views in one Redis round trip.
func PutMany(ctx context.Context, s *stock.Store, views []View) error {
	return SettleMany(ctx, s, nil, views)
}

// SettleMany caches the views of orders and others in one Redis round trip,
// and settles the orders' reservations in the same script calls
// (StatusEntry.Settle): the order writer's after-commit.
func SettleMany(ctx context.Context, s *stock.Store, orders, others []View) error {
	entries := make([]StatusEntry, 0, len(orders)+len(others))
	for i, v := range slices.Concat(orders, others) {
		b, err := json.Marshal(cached{View: v, Owner: v.UserID})
		if err != nil {
			return fmt.Errorf("orderstatus: encode: %w", err)
		}
		entries = append(entries, StatusEntry{ItemID: v.ItemID, RequestID: v.RequestID, Rank: rank(v.Status), JSON: b, Settle: i < len(orders)})
	}
	return NewStore(s).PutStatuses(ctx, entries)
}

// Decode parses a cached status as stored by Put (for readers that fetched
// the raw bytes themselves, e.g. in a pipeline with other reads).
func Decode(b []byte) (View, error) {
	var c cached
	if err := json.Unmarshal(b, &c); err != nil {
		return View{}, fmt.Errorf("orderstatus: decode cached: %w", err)
	}
	c.View.UserID = c.Owner
	return c.View, nil
}

// Get returns the cached view of a request, if any.
func Get(ctx context.Context, s *stock.Store, itemID int64, requestID string) (View, bool, error) {
	b, ok, err := NewStore(s).GetStatus(ctx, itemID, requestID)
	if err != nil || !ok {
		return View{}, false, err
	}
	v, err := Decode(b)
	if err != nil {
		return View{}, false, fmt.Errorf("%w (request %s)", err, requestID)
	}
	return v, true, nil
}
