package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// ErrInFlight is returned while requests for the item are still pending
// (Redis reservations or unconsumed messages): a rebuild now would forget them.
var ErrInFlight = errors.New("catalog: requests in flight")

// ErrNotWarmed is returned by Put when the item was saved in MySQL but Redis
// could not be rebuilt from it (the cause is wrapped): buyers see the item's
// previous Redis state, or 404 for a new item, until POST .../warm (or the
// same PUT) succeeds.
var ErrNotWarmed = errors.New("catalog: item saved but Redis not warmed")

// ErrSaleOpen is returned by Put for a change of an existing item's bucket
// count while its sale window (the current one or the one asked for) is
// open, or within SaleGuard of it: nothing is changed.
//
// A count change is refused rather than made atomic for buyers: every
// admission names its count and a bucket's script answers "moved" to any
// other, so a layout written bucket by bucket would, half way, sell some
// buckets by the old layout and some by the new, each its own stock (more
// units than MySQL has, when shrinking). Making it two-phase for a live
// sale would put a layout version into every admission; between sales
// nobody is admitted, so a change costs nothing there, and the warm's own
// two phases (stock.RetireLayout, then Warm) cover a warm that stops half
// way.
var ErrSaleOpen = errors.New("catalog: the bucket count cannot change while the sale is open")

// ErrQueueOpen is returned by Put for a change of an item's queue (turning
// it off, moving queue_opens_at or starts_at) once its queue has opened:
// tickets may exist, taken under the commitment shown and the start that
// decides which are shuffled. Nothing is changed.
var ErrQueueOpen = errors.New("catalog: the queue cannot change once it has opened")

// SaleGuard widens a sale window for ErrSaleOpen: admissions are judged
// by Redis' clock, and the rebalancer keeps moving stock for a minute
// around the window (pkg/rebalance windowMargin).
const SaleGuard = time.Minute

// saleNear reports whether now is in it's sale window widened by SaleGuard.
func saleNear(it store.Item, now time.Time) bool {
	return now.After(it.StartsAt.Add(-SaleGuard)) && now.Before(it.EndsAt.Add(SaleGuard))
}

// LagFunc returns the orders consumer group's total lag.
type LagFunc func(ctx context.Context) (int64, error)

// Catalog manages items.
type Catalog struct {
	db  *sql.DB
	st  *stock.Store
	lag LagFunc
}

// New returns a Catalog.
func New(db *sql.DB, st *stock.Store, lag LagFunc) *Catalog {
	return &Catalog{db: db, st: st, lag: lag}
}

// Put creates or updates an item (it.TotalStock is the wanted total) and
// then brings Redis in line: a full rebuild when the stock was set or Redis
// lost the item, otherwise only the sale window and limit. Errors:
// store.ErrHasOrders, ErrInFlight, ErrSaleOpen, stock.ErrUnavailable
// (nothing changed), ErrNotWarmed (saved, Redis not rebuilt).
//
// MySQL commits first and Redis is warmed after, from the committed row:
// Redis never knows an item, or a stock, that MySQL does not. A lost commit
// (client gone, connection dropped at COMMIT) therefore leaves nothing
// behind. A rebuild that is bound to be refused (reservations pending,
// messages not yet consumed, transfers between buckets or stock changes not
// finished) is refused before the commit, so it changes
// nothing. Work that starts in the moment between the commit and the warm
// (a transfer the rebalancer plans, a request admitted) is waited for, up
// to settleWait (rebuild). A warm that fails after the commit all the same
// (Redis down, that work stuck) leaves Redis as it was, a new item unknown
// to buyers (404), until a repeated PUT or POST .../warm succeeds.
func (c *Catalog) Put(ctx context.Context, it store.Item) (store.Item, error) {
	return c.put(ctx, it.ID, func(store.Item, bool) (store.Item, error) { return it, nil })
}

// put is Put, PutInput and PatchInput: build makes the item to save from the stored one
// (found false for a new id), inside the transaction that holds its row.
func (c *Catalog) put(ctx context.Context, id int64, build func(cur store.Item, found bool) (store.Item, error)) (store.Item, error) {
	var out store.Item
	var full bool
	// A create's row lock is a gap lock that concurrent creates share, so
	// their inserts can deadlock: the victim is run again.
	err := store.RunInTxDeadlockRetry(ctx, c.db, sql.LevelDefault, func(tx *sql.Tx) error {
		cur, err := store.GetItemForUpdate(ctx, tx, id)
		found := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		it, err := build(cur, found)
		if err != nil {
			return err
		}
		if err := refuseOpenRebucket(ctx, tx, it, time.Now()); err != nil {
			return err
		}
		if found {
			if err := refuseQueueChange(cur, it, time.Now()); err != nil {
				return err
			}
		}
		ch, err := store.UpsertItem(ctx, tx, it)
		if err != nil {
			return err
		}
		if err := waitroom.SaveQueue(ctx, tx, &ch.Item); err != nil {
			return err
		}
		_, warmed, err := c.st.Stock(ctx, it.ID)
		if err != nil {
			return err
		}
		full = ch.Created || ch.StockChanged || ch.BucketsChanged || !warmed
		if full && !ch.Created {
			if err := c.checkPending(ctx, it.ID, warmed); err != nil {
				return err
			}
			if err := c.checkLag(ctx); err != nil {
				return err
			}
			// A rebuild only because Redis lost the item: UpsertItem
			// checks these for a new stock or count, not for this.
			if !ch.StockChanged && !ch.BucketsChanged {
				if err := refuseOpenTransfers(ctx, tx, it.ID); err != nil {
					return err
				}
				if err := store.RefusePendingStockChanges(ctx, tx, it.ID); err != nil {
					return fmt.Errorf("%w: %w", ErrInFlight, err)
				}
			}
		}
		out = ch.Item
		return nil
	})
	if err != nil {
		return store.Item{}, err
	}
	// Committed: finish the warm even if the caller leaves now.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), warmTimeout)
	defer cancel()
	if err := c.rebuild(wctx, out.ID, !full); err != nil {
		return out, fmt.Errorf("%w: item %d: %w", ErrNotWarmed, out.ID, err)
	}
	return out, nil
}

// refuseOpenRebucket returns ErrSaleOpen when it changes the bucket count
// of an existing item while its current or its new sale window is near now
// (the item's row is locked until tx ends).
func refuseOpenRebucket(ctx context.Context, tx *sql.Tx, it store.Item, now time.Time) error {
	cur, err := store.GetItemForUpdate(ctx, tx, it.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if it.Buckets == 0 || max(it.Buckets, 1) == max(cur.Buckets, 1) {
		return nil
	}
	if saleNear(cur, now) || saleNear(it, now) {
		return fmt.Errorf("%w: item %d has %d buckets; its sale runs from %s to %s (asked: %s to %s); close the window first, change the count, then open it again",
			ErrSaleOpen, it.ID, max(cur.Buckets, 1), cur.StartsAt.UTC().Format(time.RFC3339), cur.EndsAt.UTC().Format(time.RFC3339),
			it.StartsAt.UTC().Format(time.RFC3339), it.EndsAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// refuseQueueChange returns ErrQueueOpen when it changes the queue of cur
// (off, another queue_opens_at, shuffle window or round) or its starts_at
// after cur's queue opened. starts_at and the window are where each round
// of shuffled tickets ends: whoever could move them once tickets exist
// could choose which of them are shuffled together. Turning a queue on is always allowed: its commitment is committed
// with it, before any ticket can be taken.
func refuseQueueChange(cur, it store.Item, now time.Time) error {
	if !cur.Queue || now.Before(cur.QueueOpensAt) {
		return nil
	}
	ms := func(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) } // DATETIME(3)
	if it.Queue && ms(it.QueueOpensAt).Equal(ms(cur.QueueOpensAt)) && ms(it.StartsAt).Equal(ms(cur.StartsAt)) &&
		it.QueueShuffleWindow == cur.QueueShuffleWindow && it.QueueRound == cur.QueueRound {
		return nil
	}
	return fmt.Errorf("%w: item %d's queue opened at %s", ErrQueueOpen, cur.ID, cur.QueueOpensAt.UTC().Format(time.RFC3339Nano))
}

// warmTimeout bounds the warm that follows Put's commit.
const warmTimeout = 10 * time.Second

// checkPending refuses a rebuild of a warmed item while reservations wait
// for their outcome, as warm.lua would, but before anything is committed.
func (c *Catalog) checkPending(ctx context.Context, id int64, warmed bool) error {
	if !warmed {
		return nil // warm.lua rebuilds an item whose stock Redis lost
	}
	st, err := c.st.ReadState(ctx, id)
	if err != nil {
		return err
	}
	if st.Pending > 0 {
		return fmt.Errorf("%w: %d reservations of item %d pending", ErrInFlight, st.Pending, id)
	}
	return nil
}

// settleWait bounds how long the warm after a commit waits for work in
// flight (ErrInFlight) to finish: a transfer the rebalancer planned, a
// reservation admitted or a stock change begun between the commit and the
// warm. Each finishes in milliseconds; one that has not within settleWait
// is stuck, and the caller is told ErrNotWarmed.
const settleWait = 2 * time.Second

// rebuild writes item id's committed state to Redis, under its row lock
// (and its bucket rows' locks) so no consumer or reaper stock change commits
// in between. The commit before it released that lock, so the rebalancer
// may plan a transfer, or a buyer be admitted, in the moment between: the
// warm is refused for it (ErrInFlight) and tried again, backing off, until
// settleWait has passed.
func (c *Catalog) rebuild(ctx context.Context, id int64, metaOnly bool) error {
	deadline := time.Now().Add(settleWait)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		err := store.RunInTx(ctx, c.db, sql.LevelDefault, func(tx *sql.Tx) error {
			it, err := store.GetItemForUpdate(ctx, tx, id)
			if err != nil {
				return err
			}
			return c.warm(ctx, tx, it, metaOnly)
		})
		if !errors.Is(err, ErrInFlight) || time.Now().Add(pause).After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// Warm rebuilds an item's Redis stock, buyers and sale metadata from MySQL.
// Errors: store.ErrNotFound, ErrInFlight, stock.ErrUnavailable.
func (c *Catalog) Warm(ctx context.Context, id int64) (store.Item, error) {
	var out store.Item
	err := store.RunInTx(ctx, c.db, sql.LevelDefault, func(tx *sql.Tx) error {
		it, err := store.GetItemForUpdate(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := c.checkLag(ctx); err != nil {
			return err
		}
		out = it
		return c.warm(ctx, tx, it, false)
	})
	return out, err
}

func (c *Catalog) checkLag(ctx context.Context) error {
	lag, err := c.lag(ctx)
	if err != nil {
		return fmt.Errorf("catalog: consumer lag: %w", err)
	}
	if lag > 0 {
		return fmt.Errorf("%w: %d messages not yet consumed", ErrInFlight, lag)
	}
	return nil
}

// warm writes the snapshot of it (read inside tx) to Redis: every bucket's
// stock row, each buyer's mark in their home bucket.
func (c *Catalog) warm(ctx context.Context, tx *sql.Tx, it store.Item, metaOnly bool) error {
	snap := stock.Snapshot{ItemID: it.ID, Stock: it.Stock, StartsAt: it.StartsAt, EndsAt: it.EndsAt, Queue: it.Queue,
		PerUserLimit: it.PerUserLimit, MetaOnly: metaOnly}
	rows, err := store.BucketRows(ctx, tx, it.ID, true)
	if err != nil {
		return err
	}
	if it.Bucketed() {
		if len(rows) != it.Buckets {
			return fmt.Errorf("catalog: item %d has %d buckets but %d bucket rows", it.ID, it.Buckets, len(rows))
		}
		for _, r := range rows {
			snap.BucketStock = append(snap.BucketStock, r.Stock)
		}
	}
	prev, _, err := c.st.Buckets(ctx, it.ID)
	if err != nil {
		return err
	}
	snap.PrevBuckets = prev
	if !metaOnly {
		// A transfer between buckets that is not finished has moved units
		// in one store and not yet in the other; a copy of MySQL would
		// put them back where the transfer already took them from.
		if err := refuseOpenTransfers(ctx, tx, it.ID); err != nil {
			return err
		}
		// A stock change not finished has changed one store only, as an
		// open transfer has (pkg/stockchange).
		if err := store.RefusePendingStockChanges(ctx, tx, it.ID); err != nil {
			return fmt.Errorf("%w: %w", ErrInFlight, err)
		}
		holdings, err := store.BuyersOf(ctx, tx, it.ID)
		if err != nil {
			return err
		}
		for _, h := range holdings {
			snap.Buyers = append(snap.Buyers, stock.Holder{UserID: h.UserID, RequestID: h.RequestID})
		}
		restores, err := store.UnappliedRestoresOf(ctx, tx, it.ID)
		if err != nil {
			return err
		}
		for _, o := range restores {
			snap.UnappliedRestores = append(snap.UnappliedRestores, stock.RestoreRef{RequestID: o.RequestID, Bucket: o.Bucket})
		}
	}
	if !metaOnly && prev > 0 && prev != snap.Buckets() {
		// A new bucket count: first empty the old layout, so a warm that
		// stops half way leaves one layout selling, not two.
		if err := c.st.RetireLayout(ctx, it.ID, prev, snap.Buckets()); err != nil {
			if errors.Is(err, stock.ErrPending) {
				return fmt.Errorf("%w: %w", ErrInFlight, err)
			}
			return err
		}
	}
	if err := c.st.Warm(ctx, snap); err != nil {
		if errors.Is(err, stock.ErrPending) {
			return fmt.Errorf("%w: %w", ErrInFlight, err)
		}
		return err
	}
	return nil
}
