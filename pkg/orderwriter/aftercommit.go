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

// applyMany applies the results of one or many items in three pipelined
// round trips for them all, not one per request or per item: settle,
// release, statuses. The statuses come last, so a status in the cache
// means the request is settled: a buyer who polled UNPAID finds no
// reservation left when paying, and a poll never answers PENDING after
// UNPAID (an UNPAID cached first lives 5 s: should the settle come later
// than that, after a consumer's crash between the two, a poll would find
// the reservation alone). In between, a poll finds neither and reads MySQL
// (TestAfterCommitCachesOnlySettled).
func (a *afterCommit) applyMany(ctx context.Context, rs []ItemResult) error {
	var settles []stock.SettleEntry
	var releases []stock.ReleaseEntry
	var views []orderstatus.View
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
			views = append(views, orderstatus.FromDecision(d))
		}
		for _, o := range r.Ordered {
			views = append(views, orderstatus.FromOrder(o))
		}
	}
	what := fmt.Sprintf("item %d", rs[0].ItemID)
	if len(rs) > 1 {
		what = fmt.Sprintf("%d items", len(rs))
	}
	if err := a.stock.SettleMany(ctx, settles); err != nil {
		return fmt.Errorf("orderwriter: settle %s: %w", what, err)
	}
	if err := a.stock.ReleaseMany(ctx, releases); err != nil {
		return fmt.Errorf("orderwriter: release rejections of %s: %w", what, err)
	}
	if err := orderstatus.PutMany(ctx, a.stock, views); err != nil {
		return fmt.Errorf("orderwriter: cache statuses of %s: %w", what, err)
	}
	return nil
}
