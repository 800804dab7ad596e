package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/internal/negcache"
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

// loadItem returns item id from the cache, or from MySQL through one query
// shared by every concurrent caller (singleflight): a sale page refreshed by
// everyone at once, or a client hammering an unknown id, costs MySQL one
// query per id and TTL. "No such item" is cached too, briefly.
func (s *Server) loadItem(ctx context.Context, id int64) (store.Item, error) {
	now := s.items.now()
	if it, ok := s.items.get(id, now); ok {
		return it, nil
	}
	if s.items.missing.Has(id, now) {
		return store.Item{}, notFound("no such item")
	}
	ch := s.items.flights.DoChan(strconv.FormatInt(id, 10), func() (any, error) {
		// A caller that missed the cache just before another flight filled
		// it (its check and its DoChan can straddle a whole flight on a busy
		// machine) finds it here instead of querying again.
		if it, ok := s.items.get(id, s.items.now()); ok {
			return it, nil
		}
		if s.items.missing.Has(id, s.items.now()) {
			return store.Item{}, store.ErrNotFound
		}
		return s.items.fetch(ctx, id, func(ctx context.Context) (store.Item, error) {
			dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
			defer cancel()
			return store.GetItem(dctx, s.db, id)
		})
	})
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return store.Item{}, unavailable("item temporarily unavailable")
	}
	if errors.Is(res.Err, store.ErrNotFound) {
		return store.Item{}, notFound("no such item")
	}
	if res.Err != nil {
		s.log.WarnContext(ctx, "item: mysql unavailable", "err", res.Err)
		return store.Item{}, unavailable("item temporarily unavailable")
	}
	return res.Val.(store.Item), nil
}

// itemCache keeps item rows for a short TTL, and for as long the ids MySQL
// does not have; admin updates are visible after it (at once on the replica
// that made them). Found items are bounded by the catalog, missing ids by
// the negative cache's size.
type itemCache struct {
	ttl     time.Duration
	missing *negcache.Cache[int64]
	flights singleflight.Group
	// gen counts forgets: a load that started before one must not cache
	// what it read (it may predate the update).
	gen atomic.Uint64

	// now is the cache's clock, time.Now; a test replaces it (before the
	// server serves) to pass a TTL without waiting for it.
	now func() time.Time

	mu sync.RWMutex
	m  map[int64]cachedItem
}

type cachedItem struct {
	it      store.Item
	expires time.Time
}

// maxMissingItems bounds the unknown item ids remembered.
const maxMissingItems = 10000

func newItemCache(ttl time.Duration) *itemCache {
	return &itemCache{ttl: ttl, missing: negcache.New[int64](ttl, maxMissingItems), now: time.Now, m: map[int64]cachedItem{}}
}

func (c *itemCache) get(id int64, now time.Time) (store.Item, bool) {
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	return e.it, ok && now.Before(e.expires)
}

// fetch runs load detached from the caller that started the flight (the
// others share its result, and would otherwise all fail when that one
// client hangs up) and caches what it finds, or that there is nothing, for a
// TTL counted from when it asked: nothing written after the query started
// stays hidden longer than the TTL.
func (c *itemCache) fetch(ctx context.Context, id int64, load func(context.Context) (store.Item, error)) (store.Item, error) {
	gen, asked := c.gen.Load(), c.now()
	it, err := load(context.WithoutCancel(ctx))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return it, err
	}
	switch {
	case err == nil:
		c.m[it.ID] = cachedItem{it: it, expires: asked.Add(c.ttl)}
	case errors.Is(err, store.ErrNotFound):
		c.missing.Add(id, asked)
	}
	return it, err
}

// forget drops what is known of id, found or missing: it was just written.
func (c *itemCache) forget(id int64) {
	c.mu.Lock()
	c.gen.Add(1)
	delete(c.m, id)
	c.missing.Forget(id)
	c.mu.Unlock()
}

// forgetOlder forgets id if the entry cached for it was asked for before
// before, and reports whether it did.
func (c *itemCache) forgetOlder(id int64, before time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || !e.expires.Add(-c.ttl).Before(before) {
		return false
	}
	c.gen.Add(1)
	delete(c.m, id)
	return true
}
