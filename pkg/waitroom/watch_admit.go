package waitroom

import (
	"context"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// admitWatch tells the waiting ticket polls of an item what they wait for:
// that it sold out, or that the gate reached their position. One reader
// per item that has polls waiting, on this replica, reads the item's Redis
// stock and gate every interval; it closes the item's sold channel when
// the stock is gone, waking every poll at once, and when the serving
// position moves it wakes the polls whose position it reached, nearest
// first, and no other (posWaiters). The cost is two Redis reads per item
// per interval, whatever the number of waiters, and a change is seen
// within an interval plus one read (the 1 s sold-out promise with a 100 ms
// interval). Every read also times the gate's moves for the estimate
// (rates).
type admitWatch struct {
	itemReaders[*watchedItem]
	// rates is the items' gates as every read saw them move, the rate
	// the estimates use (admit_rate.go); it outlives the readers.
	rates *admitRates
}

// watchedItem is one item's reader and its waiters.
type watchedItem struct {
	readerRefs
	sold chan struct{} // closed once the item read sold out

	mu      sync.Mutex
	read    bool       // serving was read at least once
	serving int64      // the gate's serving position, as last read
	tickets int64      // the tickets taken, as last read
	gateAt  time.Time  // when the gate was last read, by the rates' clock
	waiters posWaiters // polls waiting for the gate to reach their positions
	leftOK  bool       // left was read at least once
	left    int64      // the item's Redis stock, as last read
	readAt  time.Time  // when the last read of both stock and gate ended
}

func newAdmitWatch(st *stock.Store, wr *Store, every, timeout time.Duration, rates *admitRates) *admitWatch {
	w := &admitWatch{rates: rates}
	w.itemReaders = newItemReaders(st, wr, every, timeout, newWatchedItem, w.read)
	return w
}

func newWatchedItem() *watchedItem {
	return &watchedItem{sold: make(chan struct{})}
}

// servingNow is the serving position as last read (ok false before the
// first read).
func (wi *watchedItem) servingNow() (serving int64, ok bool) {
	wi.mu.Lock()
	defer wi.mu.Unlock()
	return wi.serving, wi.read
}

// waitFor is a poll's wait for the gate to reach pos: reached is closed
// once a read saw the serving position at pos or beyond (at once if the
// last one did); cancel, when the poll stops waiting, forgets it (safe to
// call more than once).
func (wi *watchedItem) waitFor(pos int64) (reached <-chan struct{}, cancel func()) {
	wi.mu.Lock()
	defer wi.mu.Unlock()
	if wi.read && wi.serving >= pos {
		ch := make(chan struct{})
		close(ch)
		return ch, func() {}
	}
	w := wi.waiters.add(pos)
	return w.reached, func() {
		wi.mu.Lock()
		defer wi.mu.Unlock()
		wi.waiters.remove(w)
	}
}

// gateNow is the serving position and the tickets taken as last read, and
// when (ok false before the first read).
func (wi *watchedItem) gateNow() (serving, tickets int64, at time.Time, ok bool) {
	wi.mu.Lock()
	defer wi.mu.Unlock()
	return wi.serving, wi.tickets, wi.gateAt, wi.read
}

// stockNow is the item's stock as last read (ok false before the first).
func (wi *watchedItem) stockNow() (left int64, ok bool) {
	wi.mu.Lock()
	defer wi.mu.Unlock()
	return wi.left, wi.leftOK
}

func (wi *watchedItem) setStock(v int64) {
	wi.mu.Lock()
	defer wi.mu.Unlock()
	wi.left, wi.leftOK = v, true
}

// setGate notes a read of the gate at at: serving position v, tickets
// taken.
func (wi *watchedItem) setGate(v, tickets int64, at time.Time) {
	wi.mu.Lock()
	defer wi.mu.Unlock()
	wi.tickets, wi.gateAt = tickets, at
	if wi.read && v == wi.serving {
		return
	}
	wi.read, wi.serving = true, v
	wi.waiters.wakeTo(v)
}

// read reads item id's stock and gate once; the reader is done once the
// item is sold out.
func (w *admitWatch) read(ctx context.Context, id int64, wi *watchedItem) (soldOut bool) {
	left, warmed, err := w.st.Stock(ctx, id)
	if err == nil && warmed && left <= 0 {
		w.drop(id, wi) // later waiters read again for themselves
		close(wi.sold)
		return true
	}
	if err == nil && warmed {
		wi.setStock(left)
	}
	if g, err := w.wr.ReadGate(ctx, id); err == nil {
		wi.setGate(g.Serving, g.Tickets, w.rates.now())
		w.rates.observe(id, g.Serving, g.Tickets)
		if warmed {
			wi.mu.Lock()
			wi.readAt = time.Now()
			wi.mu.Unlock()
		}
	}
	return false
}

// fresh is item id's stock and serving position as this replica's reader
// last read them, when one runs for the item and read both within maxAge:
// a ticket read then need not ask Redis what the reader already knows (a
// queued sale's polls are many, and each would cost two round trips).
func (w *admitWatch) fresh(id int64, maxAge time.Duration) (itemRead, bool) {
	wi, ok := w.current(id)
	if !ok {
		return itemRead{}, false
	}
	wi.mu.Lock()
	defer wi.mu.Unlock()
	if !wi.leftOK || !wi.read || time.Since(wi.readAt) > maxAge {
		return itemRead{}, false
	}
	return itemRead{left: wi.left, warmed: true, serving: wi.serving, tickets: wi.tickets, at: wi.gateAt}, true
}
