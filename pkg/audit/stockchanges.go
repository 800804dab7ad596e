package audit

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/stockchange"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// A stock change (restock or withdraw, pkg/stockchange) still PENDING has
// changed MySQL by one amount and Redis by another: a restock's MySQL side
// commits with its row and its Redis side follows, a withdraw's Redis take
// comes first and its MySQL side follows. Per bucket, what Redis lacks of
// MySQL's total is exactly: what MySQL changed so far (a restock's share of
// the bucket, nothing for a withdraw) less what the bucket's guard says
// Redis changed (nothing without a guard). The audit adds that to the Redis
// side, so a change stopped between its writes (a crash, an outage) still
// audits exact.
//
// The change's row and guards are read before and after every other read.
// When they differ, or a change of the item was recorded meanwhile (the
// count of its rows), a change ran during the audit: its units may be in
// one read and not in another, so the Redis checks wait, and Info says so.

// changeView is what the audit saw of an item's stock changes.
type changeView struct {
	rows int64 // stock_changes rows of the item, any state
	// lag[b] is what bucket b's Redis lacks of MySQL because of PENDING
	// changes; guards[op] their guards, to compare two views.
	lag    map[int]int64
	guards map[string][]int64
}

func (a changeView) same(b changeView) bool {
	return a.rows == b.rows && maps.EqualFunc(a.guards, b.guards, slices.Equal[[]int64])
}

func (a changeView) total() int64 {
	var s int64
	for _, v := range a.lag {
		s += v
	}
	return s
}

// readChanges reads item's PENDING changes and their guards.
func readChanges(ctx context.Context, db *sql.DB, st *stock.Store, itemID int64) (changeView, error) {
	v := changeView{lag: map[int]int64{}, guards: map[string][]int64{}}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM stock_changes WHERE item_id = ?", itemID).Scan(&v.rows); err != nil {
		return v, fmt.Errorf("audit: stock changes of %d: %w", itemID, err)
	}
	if v.rows == 0 {
		return v, nil
	}
	pending, err := store.PendingStockChanges(ctx, db, itemID, 1000)
	if err != nil {
		return v, err
	}
	guards := stockchange.NewStore(st)
	for _, c := range pending {
		units, ran, err := guards.Guards(ctx, itemID, c.Buckets, c.OperationID)
		if err != nil {
			return v, err
		}
		key := make([]int64, 0, 2*len(units))
		var mysql []int64
		if c.Delta > 0 {
			mysql = stockchange.Spread(c.Delta, c.Buckets)
		}
		for b := range units {
			if b < len(mysql) {
				v.lag[b] += mysql[b]
			}
			v.lag[b] -= units[b]
			r := int64(0)
			if ran[b] {
				r = 1
			}
			key = append(key, units[b], r)
		}
		v.guards[c.OperationID] = key
	}
	return v, nil
}
