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
	itemReaders[*offerItem]
}

// offerItem is one item's reader and its waiters.
type offerItem struct {
	readerRefs

	mu      sync.Mutex
	read    bool // read at least once
	ver     int64
	offers  map[int64]Offer
	left    int64 // the item's Redis stock, as last read
	changed chan struct{}
}

func newOfferWatch(st *stock.Store, wr *Store, every, timeout time.Duration) *offerWatch {
	w := &offerWatch{}
	w.itemReaders = newItemReaders(st, wr, every, timeout, func() *offerItem { return &offerItem{changed: make(chan struct{})} }, w.read)
	return w
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

// read reads item id's waitlist version and stock once, and the offers when
// the version moved; the reader goes on until nobody waits.
func (w *offerWatch) read(ctx context.Context, id int64, oi *offerItem) bool {
	wl, err := w.wr.ReadWaitlist(ctx, id)
	if err != nil {
		return false
	}
	left, _, err := w.st.Stock(ctx, id)
	if err != nil {
		return false
	}
	oi.mu.Lock()
	same := oi.read && wl.Version == oi.ver
	oi.mu.Unlock()
	var offers map[int64]Offer
	if !same {
		if offers, err = w.wr.Offers(ctx, id); err != nil {
			return false
		}
	}
	oi.mu.Lock()
	defer oi.mu.Unlock()
	if same && (left > 0) == (oi.left > 0) {
		oi.left = left
		return false
	}
	if !same {
		oi.ver, oi.offers = wl.Version, offers
	}
	oi.read, oi.left = true, left
	close(oi.changed)
	oi.changed = make(chan struct{})
	return false
}
