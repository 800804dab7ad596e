package admission

import (
	"sync"
	"time"
)

// soldOutCache remembers, per item, until when a sold-out answer may be given
// from memory. Entries expire on their own because stock comes back when an
// unpaid order is cancelled or a reservation is voided; the TTL bounds how
// long a buyer can be told "sold out" after that.
//
// A request carrying an Idempotency-Key may be the replay of an admitted
// request, whose answer is its first 202, not "sold out". Every admitted
// request's user is in the item's buyer set, so the flag keeps a snapshot of
// that set taken when Redis said "sold out" (no admission can happen while
// nothing is left): a keyed request from a user outside the snapshot cannot
// be the replay of an admission and is answered from memory too. Keyed
// requests of buyers still go to Redis for their first answer.
type soldOutCache struct {
	ttl   time.Duration
	items sync.Map // int64 -> *soldOut
	// fetching marks items whose buyer snapshot is being read, so a burst of
	// sold-out answers reads it once, not once per request.
	fetching sync.Map // int64 -> struct{}
}

type soldOut struct {
	until  int64              // unix nanos
	buyers map[int64]struct{} // nil: no snapshot, keyed requests go to Redis
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
	if !keyed {
		return true
	}
	if e.buyers == nil {
		return false
	}
	_, buyer := e.buyers[user]
	return !buyer
}

// NeedsMark reports whether this caller should record a fresh flag: the
// item has no fresh flag and nobody else is reading its buyers. A true
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

// Mark records that Redis said item is sold out at now, with the buyers
// snapshot (nil when it could not be read).
func (c *soldOutCache) Mark(item int64, now time.Time, buyers map[int64]struct{}) {
	c.items.Store(item, &soldOut{until: now.Add(c.ttl).UnixNano(), buyers: buyers})
	c.fetching.Delete(item)
}

// Forget drops the flag when this process gave stock back.
func (c *soldOutCache) Forget(item int64) { c.items.Delete(item) }
