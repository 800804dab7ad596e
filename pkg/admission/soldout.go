package admission

import (
	"sync"
	"sync/atomic"
	"time"
)

// soldOutCache remembers, per item, until when a sold-out answer may be given
// from memory. Entries expire on their own because stock comes back when an
// unpaid order is cancelled or a reservation is voided; the TTL bounds how
// long a buyer can be told "sold out" after that.
//
// Only requests without an Idempotency-Key are answered from it. A keyed
// request may be the replay of an admitted request, whose answer is its first
// 202, and only Redis knows that: keyed requests always go to Redis (one O(1)
// script call). An earlier version kept a snapshot of the item's whole buyer
// set to answer keyed non-buyers from memory, but every replica re-read up to
// 200,000 members every TTL at the moment of sell-out, blocking Redis, and
// the snapshot was wrong as soon as stock came back and someone bought it.
//
// The map holds one small entry per item flagged within the last TTL: Mark
// prunes expired entries, so it stays bounded by the items on sale.
type soldOutCache struct {
	ttl       time.Duration
	items     sync.Map // int64 item -> int64 until (unix nanos)
	lastPrune atomic.Int64
}

func newSoldOutCache(ttl time.Duration) *soldOutCache { return &soldOutCache{ttl: ttl} }

// Hit reports whether an unkeyed attempt on item may be answered "sold out"
// from memory at now.
func (c *soldOutCache) Hit(item int64, now time.Time) bool {
	if c.ttl <= 0 {
		return false
	}
	v, ok := c.items.Load(item)
	if !ok {
		return false
	}
	if now.UnixNano() >= v.(int64) {
		c.items.CompareAndDelete(item, v)
		return false
	}
	return true
}

// Mark records that Redis said item is sold out at now. A fresh flag is not
// extended: the TTL counts from the verdict that set it.
func (c *soldOutCache) Mark(item int64, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	n := now.UnixNano()
	if v, ok := c.items.Load(item); ok && n < v.(int64) {
		return
	}
	c.items.Store(item, n+c.ttl.Nanoseconds())
	if last := c.lastPrune.Load(); n-last >= c.ttl.Nanoseconds() && c.lastPrune.CompareAndSwap(last, n) {
		c.items.Range(func(k, v any) bool {
			if n >= v.(int64) {
				c.items.CompareAndDelete(k, v)
			}
			return true
		})
	}
}

// Forget drops the flag when this process gave stock back.
func (c *soldOutCache) Forget(item int64) { c.items.Delete(item) }

// size counts the entries (tests).
func (c *soldOutCache) size() int {
	n := 0
	c.items.Range(func(any, any) bool { n++; return true })
	return n
}
