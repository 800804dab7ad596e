package rowcache

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/internal/negcache"
)

// ErrLeft is Load's answer to a caller whose context ended before the load
// it waits on did: the load goes on for the others, and fills the cache.
var ErrLeft = errors.New("rowcache: the caller left before the load ended")

// maxMissing bounds the unknown ids remembered.
const maxMissing = 10000

// Cache keeps rows read by id for a short TTL, and for as long the ids the
// store does not have; a write is visible after it (at once on the replica
// that made it and called Forget). Found rows are bounded by what the store
// holds, missing ids by the negative cache's size.
type Cache[V any] struct {
	ttl      time.Duration
	notFound error // the load's answer for an id the store does not have
	missing  *negcache.Cache[int64]
	flights  singleflight.Group
	// gen counts forgets: a load that started before one must not cache
	// what it read (it may predate the write).
	gen atomic.Uint64

	// now is the cache's clock, time.Now; a test replaces it (SetClock,
	// before the cache serves) to pass a TTL without waiting for it.
	now func() time.Time

	mu sync.RWMutex
	m  map[int64]cached[V]
}

type cached[V any] struct {
	v       V
	expires time.Time
}

// New returns an empty cache whose entries live ttl. notFound is the error
// (matched with errors.Is) by which a load says the store has no such id;
// Load answers it for an id remembered missing too.
func New[V any](ttl time.Duration, notFound error) *Cache[V] {
	return &Cache[V]{ttl: ttl, notFound: notFound, missing: negcache.New[int64](ttl, maxMissing), now: time.Now, m: map[int64]cached[V]{}}
}

// TTL is how long an entry lives.
func (c *Cache[V]) TTL() time.Duration { return c.ttl }

// Now is the time by the cache's clock.
func (c *Cache[V]) Now() time.Time { return c.now() }

// SetClock makes the cache tell time by now. Call it before the cache
// serves (the field is read unlocked).
func (c *Cache[V]) SetClock(now func() time.Time) { c.now = now }

// Load returns row id from the cache, or through load, one call shared by
// every concurrent caller (singleflight): a page refreshed by everyone at
// once, or a client hammering an unknown id, costs the store one query per
// id and TTL. "No such id" is cached too, briefly. load runs detached from
// the caller that started the flight (the others share its result, and
// would otherwise all fail when that one client hangs up); a caller whose
// ctx ends first gets ErrLeft.
func (c *Cache[V]) Load(ctx context.Context, id int64, load func(context.Context) (V, error)) (V, error) {
	var zero V
	now := c.now()
	if v, ok := c.get(id, now); ok {
		return v, nil
	}
	if c.missing.Has(id, now) {
		return zero, c.notFound
	}
	ch := c.flights.DoChan(strconv.FormatInt(id, 10), func() (any, error) {
		// A caller that missed the cache just before another flight filled
		// it (its check and its DoChan can straddle a whole flight on a busy
		// machine) finds it here instead of querying again.
		if v, ok := c.get(id, c.now()); ok {
			return v, nil
		}
		if c.missing.Has(id, c.now()) {
			return zero, c.notFound
		}
		return c.fetch(ctx, id, load)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return zero, res.Err
		}
		return res.Val.(V), nil
	case <-ctx.Done():
		return zero, ErrLeft
	}
}

func (c *Cache[V]) get(id int64, now time.Time) (V, bool) {
	c.mu.RLock()
	e, ok := c.m[id]
	c.mu.RUnlock()
	return e.v, ok && now.Before(e.expires)
}

// fetch runs load detached from ctx and caches what it finds, or that there
// is nothing, for a TTL counted from when it asked: nothing written after
// the query started stays hidden longer than the TTL.
func (c *Cache[V]) fetch(ctx context.Context, id int64, load func(context.Context) (V, error)) (V, error) {
	gen, asked := c.gen.Load(), c.now()
	v, err := load(context.WithoutCancel(ctx))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return v, err
	}
	switch {
	case err == nil:
		c.m[id] = cached[V]{v: v, expires: asked.Add(c.ttl)}
	case errors.Is(err, c.notFound):
		c.missing.Add(id, asked)
	}
	return v, err
}

// Forget drops what is known of id, found or missing: it was just written.
func (c *Cache[V]) Forget(id int64) {
	c.mu.Lock()
	c.gen.Add(1)
	delete(c.m, id)
	c.missing.Forget(id)
	c.mu.Unlock()
}

// ForgetOlder forgets id if the entry cached for it was asked for before
// before, and reports whether it did.
func (c *Cache[V]) ForgetOlder(id int64, before time.Time) bool {
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
