package orderwriter

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// afterCommit applies an item's committed decisions to Redis: settle the
// reservations of orders, release those of rejections, and cache every
// terminal status. Every step is idempotent (the reservation is the guard;
// the status cache never moves backwards), so the whole step is simply
// repeated until it succeeds, and a redelivered batch replays it.
type afterCommit struct {
	stock *stock.Store
}

func releaseOptions(reason string) (stock.ReleaseOptions, bool) {
	switch reason {
	case store.ReasonSoldOut:
		// MySQL has no stock to match it: do not give it back to Redis, but
		// let the buyer try again (stock may come back on cancellation).
		return stock.ReleaseOptions{RemoveBuyer: true}, true
	case store.ReasonDuplicateBuyer:
		// The buyer does own an order: keep the mark, return the extra unit.
		return stock.ReleaseOptions{ReturnStock: true}, true
	case store.ReasonUnknownItem:
		// MySQL has no such item, so no stock to match: as for sold_out, an
		// item Redis alone knows drains instead of admitting more buyers
		// nobody can serve; the buyer may try again.
		return stock.ReleaseOptions{RemoveBuyer: true}, true
	case store.ReasonUnprocessable:
		// Nothing was ordered and MySQL's stock was never taken: the unit
		// goes back to the sale and the buyer may try again.
		return stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}, true
	}
	return stock.ReleaseOptions{}, false
}

// applyMany applies the results of one or many items in at most two
// pipelined round trips for them all, not one per request or per item: the
// rejections' releases, when there are any, then every status, with the
// settle of the orders (orderstatus.SettleMany: one script call per item
// bucket caches the statuses and drops the orders' reservations). A
// rejection's reservation is not dropped there: the releases above took
// the consumer's own, and an ABORTED or VOIDED one is the ingress's or the
// reaper's to release, with its stock. So a poll finds an order's
// reservation or its status, never both and never neither
// (TestAfterCommitSettlesAsItCaches): a buyer who polled UNPAID
// finds no reservation left when paying, a poll never answers PENDING after
// UNPAID, and no poll falls between the two to read MySQL, as 4–12.5% of
// a sale's polls did when the settle went one round trip before the
// statuses.
// A rejection's release comes first because it gives the buyer back the
// right to try again, which its REJECTED tells them; a poll between the two
// reads MySQL, as before, for the few requests MySQL refuses.
func (a *afterCommit) applyMany(ctx context.Context, rs []ItemResult) error {
	var releases []stock.ReleaseEntry
	var orders, rejections []orderstatus.View
	for _, r := range rs {
		for _, d := range r.Rejected {
			if o, ok := releaseOptions(d.Reason); ok {
				o.Holder = r.Holders[d.RequestID]
				releases = append(releases, stock.ReleaseEntry{ItemID: r.ItemID, RequestID: d.RequestID, Options: o})
			}
			rejections = append(rejections, orderstatus.FromDecision(d))
		}
		for _, o := range r.Ordered {
			orders = append(orders, orderstatus.FromOrder(o))
		}
	}
	what := fmt.Sprintf("item %d", rs[0].ItemID)
	if len(rs) > 1 {
		what = fmt.Sprintf("%d items", len(rs))
	}
	if err := a.stock.ReleaseMany(ctx, releases); err != nil {
		return fmt.Errorf("orderwriter: release rejections of %s: %w", what, err)
	}
	if err := orderstatus.SettleMany(ctx, a.stock, orders, rejections); err != nil {
		return fmt.Errorf("orderwriter: settle and cache statuses of %s: %w", what, err)
	}
	return nil
}
