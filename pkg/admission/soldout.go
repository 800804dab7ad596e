package admission

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// soldOutCache remembers, per item, until when a sold-out answer may be given
// from memory. Entries expire on their own because stock comes back when an
// unpaid order is cancelled or a reservation is voided; the TTL bounds how
// long a buyer can be told "sold out" after that.
//
// A holder's request is not answered "sold out": a keyed one may be the
// replay of an admitted request, whose answer is its first 202, and an
// unkeyed one is answered 409 already_purchased naming the request that
// holds the item (410 says "nothing reserved", and a buyer who lost the 202
// and retried would believe it). Only Redis knows holders, so the flag
// keeps a snapshot of the item's holder bitmap (see stock.HolderBitmap),
// read once when it is set: a request of a user whose bit is clear never
// held the item and is answered from memory; one whose bit is set (a
// holder, or a hash collision) goes to Redis, at most one call per unit
// sold. Without a snapshot (it could not be read) keyed requests go to
// Redis and unkeyed ones are answered from memory.
//
// An earlier version copied the whole buyer set (SMEMBERS, up to 200,000
// members) on every flag, from every replica, at the moment of sell-out. The
// bitmap is at most 512 KiB whatever the number of buyers, one GET.
//
// The map holds one entry per item flagged within the last TTL: Mark prunes
// expired entries, so it stays bounded by the items on sale.
type soldOutCache struct {
	ttl       time.Duration
	items     sync.Map // int64 item -> *soldOut
	fetching  sync.Map // int64 item -> struct{}: its snapshot is being read
	lastPrune atomic.Int64
}

type soldOut struct {
	until int64              // unix nanos
	bits  stock.HolderBitmap // nil: no snapshot, keyed requests go to Redis
}

func newSoldOutCache(ttl time.Duration) *soldOutCache { return &soldOutCache{ttl: ttl} }

// Hit reports whether the attempt of user (keyed: it carries an
// Idempotency-Key) may be answered "sold out" from memory at now.
func (c *soldOutCache) Hit(item, user int64, keyed bool, now time.Time) bool {
	if c.ttl <= 0 {
		return false
	}
	v, ok := c.items.Load(item)
	if !ok {
		return false
	}
	e := v.(*soldOut)
	if now.UnixNano() >= e.until {
		c.items.CompareAndDelete(item, v)
		return false
	}
	if e.bits == nil {
		return !keyed
	}
	return !e.bits.MayHold(user)
}

// NeedsMark reports whether this caller should record a fresh flag: the
// item has no fresh flag and nobody else is reading its snapshot. A true
// answer must be followed by Mark.
func (c *soldOutCache) NeedsMark(item int64, now time.Time) bool {
	if c.ttl <= 0 {
		return false
	}
	if v, ok := c.items.Load(item); ok && now.UnixNano() < v.(*soldOut).until {
		return false
	}
	_, busy := c.fetching.LoadOrStore(item, struct{}{})
	return !busy
}

// Mark records that Redis said item is sold out at now, with the holder
// bitmap snapshot (nil when it could not be read).
func (c *soldOutCache) Mark(item int64, now time.Time, bits stock.HolderBitmap) {
	n := now.UnixNano()
	c.items.Store(item, &soldOut{until: n + c.ttl.Nanoseconds(), bits: bits})
	c.fetching.Delete(item)
	if last := c.lastPrune.Load(); n-last >= c.ttl.Nanoseconds() && c.lastPrune.CompareAndSwap(last, n) {
		c.items.Range(func(k, v any) bool {
			if n >= v.(*soldOut).until {
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
