package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/internal/rowcache"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// getItem is GET /api/v1/items/{id}: the item's description (MySQL, cached in
// memory for a second, since a sale page is refreshed by everyone at once)
// and stock_left from Redis.
func (s *Server) getItem(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	it, err := s.loadItem(ctx, id)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	left, _, err := s.st.Stock(rctx, id)
	cancel()
	if err != nil {
		return unavailable("stock temporarily unavailable")
	}
	return c.JSON(http.StatusOK, api.Item{ID: it.ID, Name: it.Name, PriceCents: it.PriceCents,
		StockLeft: max(left, 0), StartsAt: it.StartsAt.UTC(), EndsAt: it.EndsAt.UTC(),
		ItemQueue: queueOf(it)})
}

// loadItem returns item id from the item cache (internal/rowcache: a
// second's TTL, one MySQL query shared by every concurrent caller, unknown
// ids remembered briefly too).
func (s *Server) loadItem(ctx context.Context, id int64) (store.Item, error) {
	it, err := s.items.Load(ctx, id, func(ctx context.Context) (store.Item, error) {
		dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
		defer cancel()
		return store.GetItem(dctx, s.db, id)
	})
	switch {
	case err == nil:
		return it, nil
	case errors.Is(err, store.ErrNotFound):
		return store.Item{}, notFound("no such item")
	case errors.Is(err, rowcache.ErrLeft):
		return store.Item{}, unavailable("item temporarily unavailable")
	}
	s.log.WarnContext(ctx, "item: mysql unavailable", "err", err)
	return store.Item{}, unavailable("item temporarily unavailable")
}

// forgetItem drops what this replica knows of item id, in the buyers' item
// cache and in the waiting room's view of it: an admin just wrote it.
func (s *Server) forgetItem(id int64) {
	s.items.Forget(id)
	s.room.ForgetItem(id)
}
