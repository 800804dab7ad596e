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
// That GET is worth it only for an item that many requests ask while it is
// sold out: the bitmap is as wide for an item of 5 units as for one of
// 100,000, and a sale of 1,000 small items read up to 1,000 of them every
// TTL, queueing the admissions behind them (BENCHMARKS.md, "Seed 002's
// choice"). So a flag reads the snapshot only when the item's previous flag
// saw at least BitsWorthAt requests. The first flag of an item, and the
// flags of quiet items, only count (MarkCounting): every request goes to
// Redis, one small script call each, so a holder is still told 409, not
// 410. A counting flag that sees BitsWorthAt requests ends at once, so a
// hot item gets its snapshot after that many calls, not after a whole TTL.
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
	until atomic.Int64       // unix nanos; set to 0 to have the flag marked again at once
	bits  stock.HolderBitmap // nil: no snapshot (see counting)
	// counting: the snapshot was not read on purpose (a quiet item). The
	// flag answers nothing from memory, so no holder is ever told 410; it
	// counts the requests, and ends once they make the snapshot worth it.
	// Not counting with nil bits: the snapshot could not be read, keyed
	// requests go to Redis and unkeyed ones are answered from memory.
	counting bool
	seen     atomic.Int64 // requests Hit saw while the flag was fresh
}

// BitsWorthAt is how many requests an item's flag must see in one TTL for
// its next flag to read the holder bitmap (exported for the ingress's
// tests). A sold-out admission script call costs Redis some tens of
// microseconds, a GET of a 512 KiB bitmap about a millisecond and the
// ingress as much again to receive it: past a few dozen calls the snapshot
// is cheaper.
const BitsWorthAt = 64

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
	if now.UnixNano() >= e.until.Load() {
		return false // kept until Mark replaces or prunes it: WantsBits reads its count
	}
	n := e.seen.Add(1)
	if e.counting {
		// A quiet item's flag that turns out busy is ended at once, so
		// the next sold-out answer from Redis marks it again with the
		// snapshot: a hot item pays BitsWorthAt script calls, not a TTL.
		if n == BitsWorthAt {
			e.until.Store(0)
		}
		return false
	}
	if e.bits == nil {
		return !keyed
	}
	return !e.bits.MayHold(user)
}

// NeedsMark reports whether this caller should record a fresh flag: the
// item has no fresh flag and nobody else is reading its snapshot. A true
// answer claims the item and must be followed by Mark or MarkCounting,
// which both release the claim (mark clears fetching); otherwise NeedsMark
// answers false for the item on this process from then on, and it is never
// flagged again.
func (c *soldOutCache) NeedsMark(item int64, now time.Time) bool {
	if c.ttl <= 0 {
		return false
	}
	if v, ok := c.items.Load(item); ok && now.UnixNano() < v.(*soldOut).until.Load() {
		return false
	}
	_, busy := c.fetching.LoadOrStore(item, struct{}{})
	return !busy
}

// WantsBits reports whether the flag about to be marked for item should
// carry a holder bitmap snapshot (Mark) or only count (MarkCounting): its
// previous flag saw BitsWorthAt requests or more. Without a previous flag
// (the item's first sell-out, or a flag pruned or forgotten since) it says
// no, since nothing shows the item is busy enough to pay for the GET. The
// counting flag then answers nothing from memory: every request, keyed or
// not, goes to Redis and is counted, until the flag has seen BitsWorthAt of
// them (it ends at once, and the next flag reads the snapshot) or its TTL
// ends.
func (c *soldOutCache) WantsBits(item int64) bool {
	v, ok := c.items.Load(item)
	return ok && v.(*soldOut).seen.Load() >= BitsWorthAt
}

// MarkCounting records that Redis said item is sold out at now, for a
// flag that answers nothing from memory and counts the requests (the
// item is quiet: its snapshot would cost more than it saves).
func (c *soldOutCache) MarkCounting(item int64, now time.Time) { c.mark(item, now, nil, true) }

// Mark records that Redis said item is sold out at now, with the holder
// bitmap snapshot (nil when it could not be read).
func (c *soldOutCache) Mark(item int64, now time.Time, bits stock.HolderBitmap) {
	c.mark(item, now, bits, false)
}

func (c *soldOutCache) mark(item int64, now time.Time, bits stock.HolderBitmap, counting bool) {
	n := now.UnixNano()
	e := &soldOut{bits: bits, counting: counting}
	e.until.Store(n + c.ttl.Nanoseconds())
	c.items.Store(item, e)
	c.fetching.Delete(item)
	if last := c.lastPrune.Load(); n-last >= c.ttl.Nanoseconds() && c.lastPrune.CompareAndSwap(last, n) {
		c.items.Range(func(k, v any) bool {
			if n >= v.(*soldOut).until.Load() {
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

// StockChanged is told that item's stock changed by an admin restock or
// withdraw on this process: its sold-out flag ends now, so a restocked
// item sells at once here. Other replicas' flags end by their TTL
// (FLASHSALE_SOLDOUT_TTL), the bound docs/design.md states for a restock.
func (s *Service) StockChanged(item int64) { s.soldOut.Forget(item) }
