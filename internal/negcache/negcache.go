// Package negcache remembers, for a short TTL, keys a store said do not
// exist, so a client hammering one unknown id costs the store one query per
// TTL rather than one per request.
//
// Its users are the ingress's read caches: the item caches (through
// internal/rowcache: unknown item ids) and the status poll's request cache
// (pkg/orderstatus: unknown request ids). It imports nothing of the module,
// so any package may use it.
package negcache

import (
	"sync"
	"time"
)

// Cache remembers, for a short TTL, keys MySQL said do not exist (unknown
// item ids, unknown request ids), so a client hammering one unknown id costs
// MySQL one query per TTL rather than one per request. It is bounded: past
// max entries the oldest is forgotten, which only costs a query. Entries
// expire in about insertion order (one TTL for all), so a FIFO finds the
// expired ones in amortised O(1).
type Cache[K comparable] struct {
	ttl time.Duration
	max int

	mu    sync.Mutex
	until map[K]time.Time
	fifo  []entry[K]
}

type entry[K comparable] struct {
	key   K
	until time.Time
}

// New returns an empty cache whose entries live ttl, at most max of them.
func New[K comparable](ttl time.Duration, max int) *Cache[K] {
	return &Cache[K]{ttl: ttl, max: max, until: map[K]time.Time{}}
}

// Has reports whether k was found missing less than a TTL before now.
func (c *Cache[K]) Has(k K, now time.Time) bool {
	c.mu.Lock()
	u, ok := c.until[k]
	c.mu.Unlock()
	return ok && now.Before(u)
}

// Add records that k was missing when asked at now (the time the query
// started, so a row committed after it is hidden for at most the TTL).
func (c *Cache[K]) Add(k K, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.fifo) > 0 && (!now.Before(c.fifo[0].until) || len(c.fifo) >= c.max) {
		c.pop()
	}
	u := now.Add(c.ttl)
	c.until[k] = u
	c.fifo = append(c.fifo, entry[K]{key: k, until: u})
}

// Forget drops k (it was just created).
func (c *Cache[K]) Forget(k K) {
	c.mu.Lock()
	delete(c.until, k)
	c.mu.Unlock()
}

// pop removes the oldest FIFO entry, and its key unless the key was added
// again since. Called with c.mu held.
func (c *Cache[K]) pop() {
	e := c.fifo[0]
	c.fifo[0] = entry[K]{}
	c.fifo = c.fifo[1:]
	if u, ok := c.until[e.key]; ok && u.Equal(e.until) {
		delete(c.until, e.key)
	}
	if len(c.fifo) == 0 {
		c.fifo = nil // let the backing array go
	}
}

// Len is the number of keys held (expired ones included until popped).
func (c *Cache[K]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.until)
}
