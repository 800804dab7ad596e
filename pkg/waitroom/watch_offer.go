package waitroom

import (
	"context"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// offerWatch tells the polls of sold-out tickets what they wait for: a
// waitlist offer for their buyer (waitlist.go), or stock again
// (a restock, or the waitlist giving its units back). One reader per item
// that has such polls, on this replica, reads the waitlist's version and
// the stock every interval, and the offers (a hash no larger than the units
// held) only when the version moved; it then replaces its changed channel,
// closing the old one, which wakes every poll at once. A woken poll finds
// its own offer in the reader's map: no Redis read per waiter, however many
// wait (the sell-out leaves every ticket of the item waiting here).
type offerWatch struct {
	st      *stock.Store // the item's stock
	wr      *Store       // its waiting room
	every   time.Duration
	timeout time.Duration

	mu    sync.Mutex
	items map[int64]*offerItem
}

// offerItem is one item's reader and its waiters.
type offerItem struct {
	refs int
	stop chan struct{} // closed when the last waiter left

	mu      sync.Mutex
	read    bool // read at least once
	ver     int64
	offers  map[int64]Offer
	left    int64 // the item's Redis stock, as last read
	changed chan struct{}
}

func newOfferWatch(st *stock.Store, wr *Store, every, timeout time.Duration) *offerWatch {
	return &offerWatch{st: st, wr: wr, every: every, timeout: timeout, items: map[int64]*offerItem{}}
}

// acquire registers a waiter of item id; release it when done waiting.
func (w *offerWatch) acquire(id int64) *offerItem {
	w.mu.Lock()
	defer w.mu.Unlock()
	oi := w.items[id]
	if oi == nil {
		oi = &offerItem{stop: make(chan struct{}), changed: make(chan struct{})}
		w.items[id] = oi
		go w.watch(id, oi)
	}
	oi.refs++
	return oi
}

// release drops a waiter; the last one stops the item's reader.
func (w *offerWatch) release(id int64, oi *offerItem) {
	w.mu.Lock()
	defer w.mu.Unlock()
	oi.refs--
	if oi.refs == 0 {
		close(oi.stop)
		delete(w.items, id)
	}
}

// now is user's offer as last read (found false without one), the stock
// as last read (ok false before the first read), and the channel closed at
// the next change of either.
func (oi *offerItem) now(user int64) (o Offer, found bool, left int64, ok bool, changed <-chan struct{}) {
	oi.mu.Lock()
	defer oi.mu.Unlock()
	o, found = oi.offers[user]
	return o, found, oi.left, oi.read, oi.changed
}

// watch reads item id's waitlist version and stock until nobody waits. A
// failed read is tried again at the next tick: a poll then answers at its
// deadline, as one that saw nothing change.
func (w *offerWatch) watch(id int64, oi *offerItem) {
	tk := time.NewTicker(w.every)
	defer tk.Stop()
	for {
		w.read(id, oi)
		select {
		case <-tk.C:
		case <-oi.stop:
			return
		}
	}
}

func (w *offerWatch) read(id int64, oi *offerItem) {
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	wl, err := w.wr.ReadWaitlist(ctx, id)
	if err != nil {
		return
	}
	left, _, err := w.st.Stock(ctx, id)
	if err != nil {
		return
	}
	oi.mu.Lock()
	same := oi.read && wl.Version == oi.ver
	oi.mu.Unlock()
	var offers map[int64]Offer
	if !same {
		if offers, err = w.wr.Offers(ctx, id); err != nil {
			return
		}
	}
	oi.mu.Lock()
	defer oi.mu.Unlock()
	if same && (left > 0) == (oi.left > 0) {
		oi.left = left
		return
	}
	if !same {
		oi.ver, oi.offers = wl.Version, offers
	}
	oi.read, oi.left = true, left
	close(oi.changed)
	oi.changed = make(chan struct{})
}
