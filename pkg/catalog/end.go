package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// End ends item id's sale now: MySQL's ends_at becomes now (store.EndItem;
// an item already ended keeps its first end), then every bucket's sale
// window in Redis is rewritten from the committed row (a meta-only warm,
// under the row lock, as Put's). It returns once both are done, and from
// then on no ingress replica admits a request of the item: admit.lua judges
// the window by Redis' clock on every admission, and it reads the new end.
//
// "Now" is the earlier of this host's clock and Redis': an end time ahead of
// Redis' clock would leave the sale open there until Redis reached it.
// Pending reservations, the orders taken and their payment windows are left
// alone: an order still pays until its own expires_at, and the reaper
// cancels it after that as for any other sale.
//
// Errors: store.ErrNotFound, stock.ErrUnavailable (nothing changed), and
// ErrNotWarmed (ended in MySQL, Redis not yet: repeat the End).
func (c *Catalog) End(ctx context.Context, id int64) (store.Item, error) {
	now := time.Now()
	if rt, err := c.st.Client().Time(ctx).Result(); err == nil && rt.Before(now) {
		now = rt
	} else if err != nil && !errors.Is(err, redis.Nil) {
		return store.Item{}, fmt.Errorf("catalog: end item %d: redis time: %w: %w", id, stock.ErrUnavailable, err)
	}
	var out store.Item
	err := store.RunInTx(ctx, c.db, sql.LevelDefault, func(tx *sql.Tx) error {
		it, err := store.EndItem(ctx, tx, id, now)
		out = it
		return err
	})
	if err != nil {
		return store.Item{}, err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), warmTimeout)
	defer cancel()
	if err := c.rebuild(wctx, id, true); err != nil {
		return out, fmt.Errorf("%w: item %d: %w", ErrNotWarmed, id, err)
	}
	return out, nil
}
