package orderstatus

import (
	"context"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// testHookBeforeWait, when set by a test, runs after a poll's first read
// and before it waits for its subscription: the window in which a status
// stored would be missed without the read that follows a new subscription.
var testHookBeforeWait func()

// testHookReread, when set by a test, runs before each re-read of a waiting
// poll; an error it returns is that re-read's (a slot move's TRYAGAIN),
// without asking Redis.
var testHookReread func() error

// Poll answers one status poll of rid for user, as Read, and with wait > 0
// a PENDING answer waits up to wait for its status to leave PENDING.
//
// What a waiting poll costs Redis: if its bucket's subscription is up (a
// poll of the bucket waits, or its subscription lingers, statusLinger),
// the poll joins it before its first read, so a status stored after that
// read is announced to it; the announcement carries the status, which it
// answers without reading again: one read in all. Otherwise only a poll
// whose first read found the request pending subscribes (unknown ids open
// nothing), and reads once more once subscribed, for a status stored
// between its first read and the subscription (no lost wake-up).
//
// Waiting holds no MySQL connection: an announcement without a status (the
// pay's in-doubt marker) or a subscription gap reads again, answered by
// Redis' status cache; so does FLASHSALE_STATUS_RECHECK's periodic re-read,
// for an announcement lost on the way. A poll that cannot wait (the bound,
// shutdown, Redis refusing the subscription) answers its first read at
// once, like a plain poll.
func (r *Reader) Poll(ctx context.Context, rid string, user int64, wait time.Duration) (View, error) {
	if wait <= 0 {
		return r.Read(ctx, rid, user)
	}
	item, err := reqid.Item(rid)
	if err != nil {
		return View{}, ErrNoRequest
	}
	wt := r.waits.join(item, rid)
	subscribed := wt != nil && wt.w.subscribed()
	v, err := r.Read(ctx, rid, user)
	if err != nil || v.Status != Pending {
		if wt != nil {
			r.waits.release(wt)
		}
		return v, err
	}
	if h := testHookBeforeWait; h != nil {
		h()
	}
	if wt == nil {
		if wt = r.waits.acquire(item, rid); wt == nil {
			return v, nil
		}
	}
	defer r.waits.release(wt)
	return r.await(ctx, wt, v, wait, user, subscribed), nil
}

// await waits, as Poll's waiter wt, for the status of v (PENDING) to change,
// up to wait, and answers the last view it has. subscribed: wt's
// subscription was confirmed before v was read, so v needs no re-read.
func (r *Reader) await(ctx context.Context, wt *waiter, v View, wait time.Duration, user int64, subscribed bool) View {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	select {
	case <-wt.w.ready:
	case <-deadline.C:
		return v
	case <-ctx.Done():
		return v
	case <-r.waits.done:
		return v
	}
	if !wt.w.ok {
		return v
	}
	// The re-read without an announcement (FLASHSALE_STATUS_RECHECK): an
	// announcement lost on the way (a slot migrating, a failover) costs at
	// most one interval, not the whole wait.
	var recheck <-chan time.Time
	if every := r.cfg.Recheck; every > 0 {
		tk := time.NewTicker(every)
		defer tk.Stop()
		recheck = tk.C
	}
	var carried []byte // the status the last wake-up carried; nil: read again
	read := !subscribed
	moved := 0 // re-reads in a row refused by a slot move
	for {
		var retry <-chan time.Time
		if read || carried != nil {
			nv, err := r.next(ctx, v, carried, user)
			moving := stock.SlotMoving(err)
			switch {
			case err != nil && recheck == nil && !moving:
				// A failed re-read with nothing to try again: the last
				// answer still holds.
				return v
			case err == nil && nv.Status != Pending:
				return nv
			case err == nil:
				v = nv
			}
			// A failed re-read (Redis busy) is tried again at the next
			// wake-up or recheck; the deadline answers the last view.
			// One refused by a slot move is tried again sooner too,
			// after the pause a move's refusal gets on the order path: a
			// move also drops the subscription's announcements, so
			// waiting for the next recheck made a status stored during a
			// move answered up to two rechecks late (a cold run saw
			// 1.025 s).
			if moving {
				moved++
				retry = time.After(stock.MovePause(moved)) // collected unfired once unreferenced (Go 1.23)
			} else {
				moved = 0
			}
		}
		read, carried = true, nil
		select {
		case carried = <-wt.wake:
			read = carried == nil
		case <-recheck:
		case <-retry:
		case <-deadline.C:
			return v
		case <-ctx.Done():
			return v
		case <-r.waits.done:
			return v
		}
	}
}

// next is the view a waiting poll of v moves to: the status a wake-up
// carried (the cache value status_put.lua stored and announced), or, when
// none or one that does not decode, a re-read.
func (r *Reader) next(ctx context.Context, v View, carried []byte, user int64) (View, error) {
	if js, _ := cachedStatus(string(carried)); js != nil {
		if nv, err := Decode(js); err == nil {
			return owned(nv, nv.UserID, user)
		}
	}
	return r.reread(ctx, v.RequestID, user)
}

// reread is a waiting poll's Read, or the error testHookReread makes it.
func (r *Reader) reread(ctx context.Context, rid string, user int64) (View, error) {
	if h := testHookReread; h != nil {
		if err := h(); err != nil {
			return View{}, err
		}
	}
	return r.Read(ctx, rid, user)
}
