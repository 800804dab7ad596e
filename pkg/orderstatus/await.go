package orderstatus

import (
	"context"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// testHookBeforeWait, when set by a test, runs after a poll's first read
// and before its waiter is registered: the window in which a status stored
// would be missed without the read that follows the registration.
var testHookBeforeWait func()

// testHookReread, when set by a test, runs before each re-read of a waiting
// poll; an error it returns is that re-read's (a slot move's TRYAGAIN),
// without asking Redis.
var testHookReread func() error

// Await answers a poll that asked to wait: v (the first read, PENDING)
// unless the status leaves PENDING within wait. The waiter is registered
// and subscribed BEFORE the status is read again, so a status stored between
// the first read and the subscription is seen by that read (no lost
// wake-up). Waiting holds no MySQL connection: Read is only called
// again when an announcement for rid came (or a subscription gap), and is
// then answered by Redis' status cache. A poll that cannot wait (the bound,
// shutdown, Redis refusing the subscription) answers v at once, like a plain
// poll.
func (r *Reader) Await(ctx context.Context, v View, wait time.Duration, user int64) View {
	if h := testHookBeforeWait; h != nil {
		h()
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	wt := r.waits.acquire(v.ItemID, v.RequestID)
	if wt == nil {
		return v
	}
	defer r.waits.release(wt)
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
	moved := 0 // re-reads in a row refused by a slot move
	for {
		nv, err := r.reread(ctx, v.RequestID, user)
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
		// wake-up or recheck; the deadline answers the last view. One
		// refused by a slot move is tried again sooner too, after the
		// pause a move's refusal gets on the order path: a move also
		// drops the subscription's announcements, so waiting for the
		// next recheck made a status stored during a move answered up to
		// two rechecks late (a cold run saw 1.025 s).
		var retry <-chan time.Time
		if moving {
			moved++
			retry = time.After(stock.MovePause(moved)) // collected unfired once unreferenced (Go 1.23)
		} else {
			moved = 0
		}
		select {
		case <-wt.wake:
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

// reread is a waiting poll's Read, or the error testHookReread makes it.
func (r *Reader) reread(ctx context.Context, rid string, user int64) (View, error) {
	if h := testHookReread; h != nil {
		if err := h(); err != nil {
			return View{}, err
		}
	}
	return r.Read(ctx, rid, user)
}
