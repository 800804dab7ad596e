package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Sale states, by the ingress's clock (AdminItem.state in
// ingress/openapi.yaml). Admissions are judged by Redis' clock; the two
// differ by the hosts' clock skew.
const (
	saleScheduled = "scheduled"
	saleOpen      = "open"
	saleEnded     = "ended"
)

func saleState(it store.Item, now time.Time) string {
	switch {
	case now.Before(it.StartsAt):
		return saleScheduled
	case now.Before(it.EndsAt):
		return saleOpen
	}
	return saleEnded
}

// staleVerdict is how old a cached item must be for a refusal by Redis
// (not_active) that contradicts it to reload it: an end (POST .../end, or a
// PUT on another replica) is then named sale_ended at once instead of after
// the cache's TTL, while an item whose MySQL and Redis windows disagree for
// longer (saved but not warmed) costs at most one MySQL read per item and
// this interval.
const staleVerdict = 50 * time.Millisecond

// notActive is the answer to an admission Redis refused as outside the
// sale window: 409 sale_ended once the window has ended (naturally or by
// POST .../end), else 409 sale_not_active. The refusal itself is Redis'
// (admit.lua); this only names it, from the item's row (cached), so it costs
// the refused buyer no Redis round trip.
func (s *Server) notActive(ctx context.Context, id int64) error {
	now := time.Now()
	it, err := s.loadItem(ctx, id)
	if err == nil && saleState(it, now) == saleOpen && s.items.ForgetOlder(id, s.items.Now().Add(-staleVerdict)) {
		it, err = s.loadItem(ctx, id)
	}
	if err == nil && saleState(it, now) == saleEnded {
		return newErr(http.StatusConflict, "sale_ended", "the sale of this item has ended")
	}
	return newErr(http.StatusConflict, "sale_not_active", "the sale of this item is not open")
}
