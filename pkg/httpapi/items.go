package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

type itemView struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	PriceCents int64     `json:"price_cents"`
	StockLeft  int64     `json:"stock_left"`
	StartsAt   time.Time `json:"starts_at"`
	EndsAt     time.Time `json:"ends_at"`
}

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
	return c.JSON(http.StatusOK, itemView{ID: it.ID, Name: it.Name, PriceCents: it.PriceCents,
		StockLeft: max(left, 0), StartsAt: it.StartsAt.UTC(), EndsAt: it.EndsAt.UTC()})
}

func (s *Server) loadItem(ctx context.Context, id int64) (store.Item, error) {
	if it, ok := s.items.get(id, time.Now()); ok {
		return it, nil
	}
	dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	it, err := store.GetItem(dctx, s.db, id)
	if errors.Is(err, store.ErrNotFound) {
		return it, notFound("no such item")
	}
	if err != nil {
		s.log.WarnContext(ctx, "item: mysql unavailable", "err", err)
		return it, unavailable("item temporarily unavailable")
	}
	s.items.put(it, time.Now())
	return it, nil
}

// itemCache keeps item rows for a short TTL; admin updates are visible after
// it. Only existing items are cached, so the map is bounded by the catalog.
type itemCache struct {
	ttl time.Duration
	mu  sync.RWMutex
	m   map[int64]cachedItem
}

type cachedItem struct {
	it      store.Item
	expires time.Time
}

func newItemCache(ttl time.Duration) *itemCache {
	return &itemCache{ttl: ttl, m: map[int64]cachedItem{}}
}

func (c *itemCache) get(id int64, now time.Time) (store.Item, bool) {
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	return e.it, ok && now.Before(e.expires)
}

func (c *itemCache) put(it store.Item, now time.Time) {
	c.mu.Lock()
	c.m[it.ID] = cachedItem{it: it, expires: now.Add(c.ttl)}
	c.mu.Unlock()
}

func (c *itemCache) forget(id int64) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}
