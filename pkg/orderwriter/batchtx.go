package orderwriter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// BatchWriter decides the groups of a many-item round (each one stock row's
// requests, as ItemWriter takes them) in one READ COMMITTED transaction with
// set-based statements: one read of the decisions of every request, one of
// every item, one of the buyers (the first and the last only once a first
// attempt met an earlier decision, attemptMode), one multi-row INSERT of the
// orders and one of the decisions across items, one read-back of the new
// orders (by id range), then the stock CAS of every row in (item, bucket)
// order. A batch of 500 requests over 500 items is so about ten statements
// instead of five thousand, and one commit instead of five hundred.
//
// Its decisions are ItemWriter's without a stock check (planFresh with
// checkStock false, the CAS decides): a row whose CAS comes up short rolls
// the whole transaction back, and WriteBatch names the groups of the short
// rows, which the caller decides through ItemWriter (its fallback decides
// request by request under the row lock) while the rest are tried again.
// So it does with a row another transaction holds locked: the batch locks
// its stock rows without waiting (store.LockStockRows) and names the
// groups of the busy ones, which wait for their rows apart.
type BatchWriter struct {
	DB            *sql.DB
	PaymentWindow time.Duration
	// TxTimeout bounds one transaction attempt.
	TxTimeout time.Duration
}

// WriteBatch decides groups (each all of one item and bucket, in offset
// order) in one transaction. It returns one result per group when it
// committed; or, with nothing committed, apart: the indexes of the groups
// to decide one item at a time, those whose stock rows cannot cover them
// or are locked by another transaction. Errors are ItemWriter's: errRace
// (retry now), store.IsTransient (retry with backoff), anything else
// permanent.
func (w *BatchWriter) WriteBatch(ctx context.Context, groups [][]orderlog.OrderMessage) (res []ItemResult, apart []int, err error) {
	for _, g := range groups {
		for _, m := range g[1:] {
			if m.StockKey() != g[0].StockKey() {
				return nil, nil, fmt.Errorf("orderwriter: requests of %v and %v in one group", g[0].StockKey(), m.StockKey())
			}
		}
	}
	if w.TxTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.TxTimeout)
		defer cancel()
	}
	var takes []store.StockTake
	var rows [][2]int64 // per group, its stock row (zero: takes none)
	try := func(mode attemptMode) error {
		return store.RunInTx(ctx, w.DB, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			var err error
			res, takes, rows, err = w.decide(ctx, tx, groups, mode)
			return err
		})
	}
	err = try(assumeFresh)
	if errors.Is(err, errRace) {
		err = try(checked)
	}
	var busy rowsBusy
	if errors.As(err, &busy) {
		return nil, groupsOf(rows, busy.rows), nil
	}
	if !errors.Is(err, errShortStock) {
		return res, nil, err
	}
	lacking, err := store.ShortStocks(ctx, w.DB, takes)
	if err != nil {
		return nil, nil, err
	}
	if apart = groupsOf(rows, lacking); len(apart) == 0 {
		// The stock came back (a cancel) between the CAS and the read.
		return nil, nil, fmt.Errorf("%w: batch stock short, then enough", errRace)
	}
	return nil, apart, nil
}

// rowsBusy rolls a batch back whose stock rows (some of them) another
// transaction holds locked.
type rowsBusy struct{ rows map[[2]int64]bool }

func (e rowsBusy) Error() string {
	return fmt.Sprintf("orderwriter: %d stock rows locked by another transaction", len(e.rows))
}

// groupsOf is the indexes of the groups whose stock row (rows[i]) is in set.
func groupsOf(rows [][2]int64, set map[[2]int64]bool) []int {
	var out []int
	for i, r := range rows {
		if set[r] {
			out = append(out, i)
		}
	}
	return out
}

// decide is WriteBatch's transaction: ItemWriter.decide for every group at
// once.
func (w *BatchWriter) decide(ctx context.Context, tx *sql.Tx, groups [][]orderlog.OrderMessage, mode attemptMode) ([]ItemResult, []store.StockTake, [][2]int64, error) {
	var ids []string
	var itemIDs []int64
	seenItem := map[int64]bool{}
	for _, g := range groups {
		ids = append(ids, uniqueIDs(g)...)
		if id := g[0].ItemID; !seenItem[id] {
			seenItem[id] = true
			itemIDs = append(itemIDs, id)
		}
	}
	decided, err := mode.decisionsAmong(ctx, tx, ids)
	if err != nil {
		return nil, nil, nil, err
	}
	items, err := store.GetItems(ctx, tx, itemIDs)
	if err != nil {
		return nil, nil, nil, err
	}
	splits := make([]batchSplit, len(groups))
	var pairs []store.BuyerKey
	for i, g := range groups {
		splits[i] = splitBatch(g, decided)
		if _, ok := items[g[0].ItemID]; ok {
			for _, m := range splits[i].Fresh {
				pairs = append(pairs, store.BuyerKey{ItemID: m.ItemID, UserID: m.UserID})
			}
		}
	}
	found, err := mode.existingBuyersAmong(ctx, tx, pairs)
	if err != nil {
		return nil, nil, nil, err
	}
	holders := map[int64]map[int64]string{} // item -> user -> request
	for k, rid := range found {
		if holders[k.ItemID] == nil {
			holders[k.ItemID] = map[int64]string{}
		}
		holders[k.ItemID][k.UserID] = rid
	}

	res := make([]ItemResult, len(groups))
	rows := make([][2]int64, len(groups))
	var takes []store.StockTake
	var orders []store.ItemOrder
	var decisions []store.Decision
	var replayed []string     // ORDERED by an earlier delivery: read back by request id
	owner := map[string]int{} // request id -> group, for the read-back
	for i, g := range groups {
		itemID, bucket, s := g[0].ItemID, g[0].Bucket(), splits[i]
		r := &res[i]
		*r = ItemResult{ItemID: itemID, Bucket: bucket, New: map[[2]string]int{}, Rejected: s.ReplayRejected, Dropped: s.Dropped}
		for _, id := range s.ReplayOrdered {
			owner[id] = i
		}
		replayed = append(replayed, s.ReplayOrdered...)
		item, known := items[itemID]
		if !known {
			for _, m := range s.Fresh {
				d := store.Decision{RequestID: m.RequestID, ItemID: itemID, UserID: m.UserID, Qty: m.Qty, Outcome: store.Rejected, Reason: store.ReasonUnknownItem}
				decisions = append(decisions, d)
				r.Rejected = append(r.Rejected, d)
				r.New[[2]string{string(d.Outcome), d.Reason}]++
			}
			continue
		}
		// Groups of one item (its buckets) share its buyers: a buyer
		// ordered by an earlier group holds the item for the later ones.
		held := holders[itemID]
		plan := planFresh(itemID, s.Fresh, held, item.Stock, false)
		if len(plan.Orders) > 0 {
			if held == nil {
				held = map[int64]string{}
				holders[itemID] = held
			}
			for _, o := range plan.Orders {
				held[o.UserID] = o.RequestID
			}
		}
		r.Holders = plan.Holders
		for _, d := range plan.Decisions {
			if d.Outcome == store.Rejected {
				r.Rejected = append(r.Rejected, d)
			}
			r.New[[2]string{string(d.Outcome), d.Reason}]++
		}
		decisions = append(decisions, plan.Decisions...)
		for _, o := range plan.Orders {
			orders = append(orders, store.ItemOrder{NewOrder: o, ItemID: itemID, Bucket: bucket, PriceCents: item.PriceCents})
			owner[o.RequestID] = i
		}
		if plan.Take > 0 {
			takes = append(takes, store.StockTake{Item: item, Bucket: bucket, Qty: plan.Take})
			rows[i] = store.RowOf(item, bucket)
		}
	}

	// INSERTs before the UPDATEs: the stock rows are locked only from the
	// CAS to the commit.
	fresh, err := store.InsertOrdersOf(ctx, tx, w.PaymentWindow, orders)
	if err != nil {
		return nil, nil, nil, raced(err)
	}
	if err := store.InsertDecisions(ctx, tx, decisions); err != nil {
		return nil, nil, nil, raced(err)
	}
	back, err := store.OrdersByRequest(ctx, tx, replayed)
	if err != nil {
		return nil, nil, nil, err
	}
	back = append(back, fresh...)
	if want := len(replayed) + len(orders); len(back) != want {
		return nil, nil, nil, fmt.Errorf("orderwriter: batch of %d items: read back %d of %d orders", len(itemIDs), len(back), want)
	}
	for _, o := range back {
		i := owner[o.RequestID]
		res[i].Ordered = append(res[i].Ordered, o)
	}
	busy, err := store.LockStockRows(ctx, tx, takes)
	if err != nil {
		return nil, nil, nil, err
	}
	if busy != nil {
		return nil, nil, rows, rowsBusy{busy}
	}
	ok, err := store.TakeStocks(ctx, tx, takes)
	if err != nil {
		return nil, nil, nil, err
	}
	if !ok {
		return nil, takes, rows, errShortStock
	}
	return res, nil, nil, nil
}

// raced marks a duplicate key as a lost race: another writer decided one of
// the requests first.
func raced(err error) error {
	if store.IsDuplicate(err) {
		return fmt.Errorf("%w: %w", errRace, err)
	}
	return err
}
