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

// applyMany applies the results of one or many items in pipelined round
// trips for them all, not one per request or per item, in an order that
// keeps every request findable in Redis: the orders' statuses are cached
// before their reservations are settled, so a poll between the two finds
// the one or the other and never goes to MySQL for it (when the settle came
// first, the ingress spent 5% of its CPU on those reads:
// TestAfterCommitNeverLeavesAnOrderUnfound). A rejection's status comes
// after its release instead: a buyer told sold_out may order again at once,
// and must not find the buyer mark the release removes.
func (a *afterCommit) applyMany(ctx context.Context, rs []ItemResult) error {
	var settles []stock.SettleEntry
	var releases []stock.ReleaseEntry
	var ordered, rejected []orderstatus.View
	for _, r := range rs {
		if len(r.Ordered) > 0 {
			ids := make([]string, len(r.Ordered))
			for i, o := range r.Ordered {
				ids[i] = o.RequestID
			}
			settles = append(settles, stock.SettleEntry{ItemID: r.ItemID, RequestIDs: ids})
		}
		for _, d := range r.Rejected {
			if o, ok := releaseOptions(d.Reason); ok {
				o.Holder = r.Holders[d.RequestID]
				releases = append(releases, stock.ReleaseEntry{ItemID: r.ItemID, RequestID: d.RequestID, Options: o})
			}
			rejected = append(rejected, orderstatus.FromDecision(d))
		}
		for _, o := range r.Ordered {
			ordered = append(ordered, orderstatus.FromOrder(o))
		}
	}
	what := fmt.Sprintf("item %d", rs[0].ItemID)
	if len(rs) > 1 {
		what = fmt.Sprintf("%d items", len(rs))
	}
	if err := putStatuses(ctx, a.stock, ordered); err != nil {
		return fmt.Errorf("orderwriter: cache statuses of %s: %w", what, err)
	}
	if err := a.stock.SettleMany(ctx, settles); err != nil {
		return fmt.Errorf("orderwriter: settle %s: %w", what, err)
	}
	if err := a.stock.ReleaseMany(ctx, releases); err != nil {
		return fmt.Errorf("orderwriter: release rejections of %s: %w", what, err)
	}
	if err := putStatuses(ctx, a.stock, rejected); err != nil {
		return fmt.Errorf("orderwriter: cache statuses of %s: %w", what, err)
	}
	return nil
}

// putStatuses caches views, in no round trip when there are none.
func putStatuses(ctx context.Context, st *stock.Store, views []orderstatus.View) error {
	if len(views) == 0 {
		return nil
	}
	return orderstatus.PutMany(ctx, st, views)
}
