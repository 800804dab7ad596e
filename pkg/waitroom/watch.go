package waitroom

import (
	"context"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// itemReaders keeps one reader per item that has long polls waiting on this
// replica, shared by all of them: the first waiter of an item makes its
// reader (start) and runs it in a goroutine of its own, which reads the
// item every interval (read), within the store timeout each time, until
// the last waiter leaves or read says it is done. A failed read is tried
// again at the next tick: a poll then answers at its deadline, as one that
// saw nothing change. Both of the room's watches are one: admitWatch (the
// gate and the sell-out) and offerWatch (waitlist offers and stock again);
// each keeps in its reader what that reader reads.
type itemReaders[R interface {
	comparable
	refsOf() *readerRefs
}] struct {
	st      *stock.Store // the items' stock
	wr      *Store       // their waiting room
	every   time.Duration
	timeout time.Duration
	start   func() R                                             // a new reader, not yet running
	read    func(ctx context.Context, id int64, r R) (done bool) // one read of item id

	mu    sync.Mutex
	items map[int64]R
}

// readerRefs is what itemReaders keeps in every reader: how many polls
// wait on it, and the channel that stops it.
type readerRefs struct {
	refs int
	stop chan struct{} // closed when the last waiter left
}

func (r *readerRefs) refsOf() *readerRefs { return r }

func newItemReaders[R interface {
	comparable
	refsOf() *readerRefs
}](st *stock.Store, wr *Store, every, timeout time.Duration,
	start func() R, read func(ctx context.Context, id int64, r R) bool) itemReaders[R] {
	return itemReaders[R]{st: st, wr: wr, every: every, timeout: timeout, start: start, read: read, items: map[int64]R{}}
}

// acquire registers a waiter of item id; release it when done waiting.
func (p *itemReaders[R]) acquire(id int64) R {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.items[id]
	if !ok {
		r = p.start()
		r.refsOf().stop = make(chan struct{})
		p.items[id] = r
		go p.run(id, r)
	}
	r.refsOf().refs++
	return r
}

// run reads item id every interval until r is stopped or a read is done.
func (p *itemReaders[R]) run(id int64, r R) {
	tk := time.NewTicker(p.every)
	defer tk.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		done := p.read(ctx, id, r)
		cancel()
		if done {
			return
		}
		select {
		case <-tk.C:
		case <-r.refsOf().stop:
			return
		}
	}
}

// release drops a waiter; the last one stops the item's reader.
func (p *itemReaders[R]) release(id int64, r R) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rc := r.refsOf()
	rc.refs--
	if rc.refs == 0 {
		close(rc.stop)
		if p.items[id] == r {
			delete(p.items, id)
		}
	}
}

// drop forgets r as item id's reader, which ended by itself: later waiters
// of the item start another.
func (p *itemReaders[R]) drop(id int64, r R) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.items[id] == r {
		delete(p.items, id)
	}
}

// current is item id's reader, if one runs.
func (p *itemReaders[R]) current(id int64) (R, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.items[id]
	return r, ok
}
