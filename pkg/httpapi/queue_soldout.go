package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// soldOutWatch tells the waiting ticket polls of an item that it sold out:
// one reader per item that has polls waiting, on this replica, reads the
// item's Redis stock every interval and closes the item's channel when it is
// gone, waking every poll at once. The cost is one Redis read per item per
// interval, whatever the number of waiters, and a sold-out is seen within an
// interval plus one read (the 1 s promise with a 100 ms interval).
type soldOutWatch struct {
	st      *stock.Store
	every   time.Duration
	timeout time.Duration

	mu    sync.Mutex
	items map[int64]*soldItem
}

// soldItem is one item's reader and its waiters.
type soldItem struct {
	refs int
	sold chan struct{} // closed once the item read sold out
	stop chan struct{} // closed when the last waiter left
}

func newSoldOutWatch(st *stock.Store, every, timeout time.Duration) *soldOutWatch {
	return &soldOutWatch{st: st, every: every, timeout: timeout, items: map[int64]*soldItem{}}
}

// acquire registers a waiter of item id and returns the channel closed when
// the item sells out; release it when done waiting.
func (w *soldOutWatch) acquire(id int64) *soldItem {
	w.mu.Lock()
	defer w.mu.Unlock()
	si := w.items[id]
	if si == nil {
		si = &soldItem{sold: make(chan struct{}), stop: make(chan struct{})}
		w.items[id] = si
		go w.read(id, si)
	}
	si.refs++
	return si
}

// release drops a waiter; the last one stops the item's reader.
func (w *soldOutWatch) release(id int64, si *soldItem) {
	w.mu.Lock()
	defer w.mu.Unlock()
	si.refs--
	if si.refs == 0 {
		close(si.stop)
		if w.items[id] == si {
			delete(w.items, id)
		}
	}
}

// read polls item id's stock until it is sold out or nobody waits. A failed
// read is tried again at the next tick: a poll then answers at its deadline,
// as one that saw nothing change.
func (w *soldOutWatch) read(id int64, si *soldItem) {
	tk := time.NewTicker(w.every)
	defer tk.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		left, warmed, err := w.st.Stock(ctx, id)
		cancel()
		if err == nil && warmed && left <= 0 {
			w.mu.Lock()
			if w.items[id] == si {
				delete(w.items, id) // later waiters read again for themselves
			}
			w.mu.Unlock()
			close(si.sold)
			return
		}
		select {
		case <-tk.C:
		case <-si.stop:
			return
		}
	}
}
