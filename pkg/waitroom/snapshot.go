package waitroom

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// itemRead is an item's stock and gate as one read of them saw them.
type itemRead struct {
	left    int64 // the Redis stock (the sum of its buckets)
	warmed  bool
	serving int64     // the gate's serving position
	tickets int64     // the tickets taken
	at      time.Time // when the gate was read, by the rates' clock (placedWait)
}

// itemReads shares the reads of an item's stock and gate among the ticket
// reads of this replica: what its long polls' reader (admitWatch) read in
// the last interval and a half, or else one read per item at a time, kept
// an interval. A ticket read is answered from it, not from three Redis
// round trips of its own: when a round closes, every page of the item asks
// again at once (bench -bots-queue: 11,000 tickets, each poll reading for
// itself, emptied the Redis pool and answered 503 to 266,896 polls), and a
// stale read by an interval only delays a waiting answer by as much; the
// answer a stale stock makes false, admitted, is read again (view).
type itemReads struct {
	flights singleflight.Group
	mu      sync.Mutex
	m       map[int64]itemRead
}

func newItemReads() *itemReads { return &itemReads{m: map[int64]itemRead{}} }

// read is item id's stock and gate, at most maxAge old when this replica
// has such a read, else read now (one read per item at a time, whatever
// the number of callers).
func (r *Room) read(ctx context.Context, id int64) (itemRead, error) {
	maxAge := r.cfg.WatchEvery * 3 / 2
	if e, ok := r.admits.fresh(id, maxAge); ok {
		return e, nil
	}
	c := r.reads
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && r.admits.rates.now().Sub(e.at) <= r.cfg.WatchEvery {
		return e, nil
	}
	ch := c.flights.DoChan(strconv.FormatInt(id, 10), func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StoreTimeout)
		defer cancel()
		left, warmed, err := r.st.Stock(rctx, id)
		if err != nil {
			return itemRead{}, err
		}
		g, err := r.wr.ReadGate(rctx, id)
		if err != nil {
			return itemRead{}, err
		}
		e := itemRead{left: left, warmed: warmed, serving: g.Serving, tickets: g.Tickets, at: r.admits.rates.now()}
		c.mu.Lock()
		if len(c.m) > 10_000 {
			c.m = map[int64]itemRead{} // items come and go; a miss is one read
		}
		c.m[id] = e
		c.mu.Unlock()
		return e, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return itemRead{}, res.Err
		}
		return res.Val.(itemRead), nil
	case <-ctx.Done():
		return itemRead{}, ctx.Err()
	}
}
