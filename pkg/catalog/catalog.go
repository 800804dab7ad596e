// Package catalog is the admin side of items: create or update an item in
// MySQL and (re)build its Redis state from MySQL, safely.
//
// Safety of a rebuild rests on three things: the item's MySQL row is locked
// (GetItemForUpdate) while its snapshot is read and written to Redis, so no
// consumer stock change or reaper restore commits in between; Redis itself
// refuses while reservations are pending (warm.lua); and the orders topic's
// consumer group must have no lag, so no admitted request is still on its way
// to MySQL when Redis is overwritten (this also covers Redis having lost the
// item together with its reservations).
package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// ErrInFlight is returned while requests for the item are still pending
// (Redis reservations or unconsumed messages): a rebuild now would forget them.
var ErrInFlight = errors.New("catalog: requests in flight")

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
// brings Redis in line: a full rebuild when the stock was set or Redis lost
// the item, otherwise only the sale window and limit. Errors:
// store.ErrHasOrders, ErrInFlight, stock.ErrUnavailable.
//
// Redis is written before the MySQL commit, under the row lock, so a refused
// rebuild rolls MySQL back too. Should the commit itself then fail, Redis is
// ahead of MySQL until the admin repeats the (idempotent) PUT.
func (c *Catalog) Put(ctx context.Context, it store.Item) (store.Item, error) {
	var out store.Item
	err := store.RunInTx(ctx, c.db, sql.LevelDefault, func(tx *sql.Tx) error {
		ch, err := store.UpsertItem(ctx, tx, it)
		if err != nil {
			return err
		}
		_, warmed, err := c.st.Stock(ctx, it.ID)
		if err != nil {
			return err
		}
		full := ch.Created || ch.StockChanged || !warmed
		if full && !ch.Created {
			if err := c.checkLag(ctx); err != nil {
				return err
			}
		}
		out = ch.Item
		return c.warm(ctx, tx, ch.Item, !full)
	})
	return out, err
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

// warm writes the snapshot of it (read inside tx) to Redis.
func (c *Catalog) warm(ctx context.Context, tx *sql.Tx, it store.Item, metaOnly bool) error {
	snap := stock.Snapshot{ItemID: it.ID, Stock: it.Stock, StartsAt: it.StartsAt, EndsAt: it.EndsAt,
		PerUserLimit: it.PerUserLimit, MetaOnly: metaOnly}
	if !metaOnly {
		var err error
		holdings, err := store.BuyersOf(ctx, tx, it.ID)
		if err != nil {
			return err
		}
		for _, h := range holdings {
			snap.Buyers = append(snap.Buyers, stock.Holder{UserID: h.UserID, RequestID: h.RequestID})
		}
		if snap.UnappliedRestores, err = store.UnappliedRestoresOf(ctx, tx, it.ID); err != nil {
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
