package waitroom

import (
	"context"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// admitWatch tells the waiting ticket polls of an item what they wait for:
// that it sold out, or that the gate moved its serving position (one of
// them may now be admitted). One reader per item that has polls waiting,
// on this replica, reads the item's Redis stock and gate every interval;
// it closes the item's sold channel when the stock is gone and replaces its
// moved channel (closing the old one) when the serving position changes,
// waking every poll at once. The cost is two Redis reads per item per
// interval, whatever the number of waiters, and a change is seen within an
// interval plus one read (the 1 s sold-out promise with a 100 ms interval).
type admitWatch struct {
	st      *stock.Store // the item's stock
	wr      *Store       // its waiting room
	every   time.Duration
	timeout time.Duration

	mu    sync.Mutex
	items map[int64]*watchedItem
}

// watchedItem is one item's reader and its waiters.
type watchedItem struct {
	refs int
	sold chan struct{} // closed once the item read sold out
	stop chan struct{} // closed when the last waiter left

	mu      sync.Mutex
	read    bool  // serving was read at least once
	serving int64 // the gate's serving position, as last read
	moved   chan struct{}
	leftOK  bool      // left was read at least once
	left    int64     // the item's Redis stock, as last read
	readAt  time.Time // when the last read of both stock and gate ended
}

func newAdmitWatch(st *stock.Store, wr *Store, every, timeout time.Duration) *admitWatch {
	return &admitWatch{st: st, wr: wr, every: every, timeout: timeout, items: map[int64]*watchedItem{}}
}

// acquire registers a waiter of item id; release it when done waiting.
func (w *admitWatch) acquire(id int64) *watchedItem {
	w.mu.Lock()
	defer w.mu.Unlock()
	wi := w.items[id]
	if wi == nil {
		wi = &watchedItem{sold: make(chan struct{}), stop: make(chan struct{}), moved: make(chan struct{})}
		w.items[id] = wi
		go w.watch(id, wi)
	}
	wi.refs++
	return wi
}

// release drops a waiter; the last one stops the item's reader.
func (w *admitWatch) release(id int64, wi *watchedItem) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wi.refs--
	if wi.refs == 0 {
		close(wi.stop)
		if w.items[id] == wi {
			delete(w.items, id)
		}
	}
}

// servingNow is the serving position as last read (ok false before the
// first read) and the channel closed when it next changes.
func (wi *watchedItem) servingNow() (serving int64, ok bool, moved <-chan struct{}) {
	wi.mu.Lock()
	defer wi.mu.Unlock()
	return wi.serving, wi.read, wi.moved
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

func (wi *watchedItem) setServing(v int64) {
	wi.mu.Lock()
	defer wi.mu.Unlock()
	if wi.read && v == wi.serving {
		return
	}
	wi.read, wi.serving = true, v
	close(wi.moved)
	wi.moved = make(chan struct{})
}

// watch reads item id's stock and gate until it is sold out or nobody
// waits. A failed read is tried again at the next tick: a poll then
// answers at its deadline, as one that saw nothing change.
func (w *admitWatch) watch(id int64, wi *watchedItem) {
	tk := time.NewTicker(w.every)
	defer tk.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		left, warmed, err := w.st.Stock(ctx, id)
		if err == nil && warmed && left <= 0 {
			cancel()
			w.mu.Lock()
			if w.items[id] == wi {
				delete(w.items, id) // later waiters read again for themselves
			}
			w.mu.Unlock()
			close(wi.sold)
			return
		}
		if err == nil && warmed {
			wi.setStock(left)
		}
		if g, err := w.wr.ReadGate(ctx, id); err == nil {
			wi.setServing(g.Serving)
			if warmed {
				wi.mu.Lock()
				wi.readAt = time.Now()
				wi.mu.Unlock()
			}
		}
		cancel()
		select {
		case <-tk.C:
		case <-wi.stop:
			return
		}
	}
}

// fresh is item id's stock and serving position as this replica's reader
// last read them, when one runs for the item and read both within maxAge:
// a ticket read then need not ask Redis what the reader already knows (a
// queued sale's polls are many, and each would cost two round trips).
func (w *admitWatch) fresh(id int64, maxAge time.Duration) (left, serving int64, ok bool) {
	w.mu.Lock()
	wi := w.items[id]
	w.mu.Unlock()
	if wi == nil {
		return 0, 0, false
	}
	wi.mu.Lock()
	defer wi.mu.Unlock()
	if !wi.leftOK || !wi.read || time.Since(wi.readAt) > maxAge {
		return 0, 0, false
	}
	return wi.left, wi.serving, true
}
