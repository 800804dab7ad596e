package admission

import (
	"sync"
	"time"
)

// soldOutCache remembers, per item, until when a sold-out answer may be given
// from memory. Entries expire on their own because stock comes back when an
// unpaid order is cancelled or a reservation is voided; the TTL bounds how
// long a buyer can be told "sold out" after that.
type soldOutCache struct {
	ttl   time.Duration
	items sync.Map // int64 -> int64 (unix nanos until which the item is sold out)
}

func newSoldOutCache(ttl time.Duration) *soldOutCache { return &soldOutCache{ttl: ttl} }

// Hit reports whether item is known sold out at now.
func (c *soldOutCache) Hit(item int64, now time.Time) bool {
	if c.ttl <= 0 {
		return false
	}
	v, ok := c.items.Load(item)
	if !ok {
		return false
	}
	if now.UnixNano() < v.(int64) {
		return true
	}
	c.items.CompareAndDelete(item, v)
	return false
}

// Mark records that Redis just said item is sold out.
func (c *soldOutCache) Mark(item int64, now time.Time) {
	if c.ttl > 0 {
		c.items.Store(item, now.Add(c.ttl).UnixNano())
	}
}

// Forget drops the flag when this process gave stock back.
func (c *soldOutCache) Forget(item int64) { c.items.Delete(item) }
