package waitroom

import (
	"context"
	"errors"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/api"
)

// awaitTicket waits for ticket t's state to leave v's: the item selling out
// or the gate reaching the ticket's position (admitWatch), ends_at, or the
// wait's end. A poll waiting across starts_at learns its position there,
// from this replica's drawn order, and goes on waiting for the gate rather
// than answering: every waiting poll of an item answering and asking again
// at the start was a herd that slowed the first admissions' orders (bench
// -bots-compare: 202 p99 766 ms with the queue against 209 without). The
// sell-out and the admission are answered from the watcher's reads, not a
// Redis read per waiter, so thousands of polls waking at once cost nothing
// more (the sell-out reached 8,540 waiters in up to 1.59 s when each read
// again). A move of the gate wakes only the polls whose position it
// reached (posWaiters): the others have nothing to answer before their
// deadline.
func (r *Room) awaitTicket(ctx context.Context, it Item, t Ticket, v api.TicketStatus, wait time.Duration) api.TicketStatus {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	wi := r.admits.acquire(it.ID)
	defer r.admits.release(it.ID, wi)
	// A ticket without a place waits for its round's close, and learns
	// its place there (the gate publishes the close within a pass: until
	// then the poll looks again every roundRetry).
	var start <-chan time.Time
	if v.State == api.TicketWaiting && v.Position == nil && v.RoundClosesAt != nil {
		st := time.NewTimer(max(time.Until(*v.RoundClosesAt), 0))
		defer st.Stop()
		start = st.C
	}
	end := time.NewTimer(time.Until(it.EndsAt))
	defer end.Stop()
	// reached is closed when the gate reaches the ticket's position: the
	// reader wakes this poll then, and not on every move (posWaiters).
	var reached <-chan struct{}
	unwait := func() {}
	defer func() { unwait() }()
	for {
		placed := v.State == api.TicketWaiting && v.Position != nil
		if serving, ok := wi.servingNow(); placed && ok && serving >= *v.Position {
			return r.admittedView(ctx, it, t, v, wi)
		}
		if placed && reached == nil {
			reached, unwait = wi.waitFor(*v.Position)
		}
		select {
		case <-wi.sold:
			return soldOutView(v)
		case <-start:
			start = nil
			pos, err := r.position(ctx, it, t)
			if errors.Is(err, ErrRoundOpen) {
				start = time.After(roundRetry)
				continue
			}
			if err != nil {
				return v
			}
			ahead := pos - 1
			v.Position, v.Ahead = &pos, &ahead
			r.withProof(ctx, &v, it, t)
		case <-reached:
			// Waited for anew if the serving position read is below the
			// ticket's after all (the gate's state built again lower):
			// a closed channel left in the select would spin.
			reached = nil
		case <-end.C:
			if nv, err := r.view(ctx, it, t); err == nil {
				return nv
			}
			return v
		case <-deadline.C:
			return r.waitingView(ctx, it, t, v, wi)
		case <-ctx.Done():
			return v
		case <-r.done:
			return v
		}
	}
}

// awaitOffer waits, for sold-out ticket t (view v), until the waitlist
// offers its buyer a unit (offered, with the offer's grant), the item has
// stock again (a restock, or the waitlist giving its units back: the
// ticket is read again), ends_at, or the wait's end. Both are answered
// from offerWatch's reads, not a Redis read per waiter.
func (r *Room) awaitOffer(ctx context.Context, it Item, t Ticket, v api.TicketStatus, wait time.Duration) api.TicketStatus {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	end := time.NewTimer(time.Until(it.EndsAt))
	defer end.Stop()
	oi := r.offers.acquire(it.ID)
	defer r.offers.release(it.ID, oi)
	for {
		o, found, left, read, changed := oi.now(t.UserID)
		if found && o.Ticket == t.ID && time.Now().Before(o.Expires) {
			g, err := r.offerGrant(ctx, it.ID, t.UserID, o.Expires)
			if err != nil {
				return v
			}
			exp := o.Expires.UTC()
			v.State, v.AdmissionGrant, v.GrantExpiresAt = api.TicketOffered, g, &exp
			return v
		}
		if read && left > 0 {
			if nv, err := r.view(ctx, it, t); err == nil {
				return nv
			}
			return v
		}
		select {
		case <-changed:
		case <-end.C:
			if nv, err := r.view(ctx, it, t); err == nil {
				return nv
			}
			return v
		case <-deadline.C:
			return v
		case <-ctx.Done():
			return v
		case <-r.done:
			return v
		}
	}
}

// soldOutView is waiting view v once the watcher read the item sold out.
func soldOutView(v api.TicketStatus) api.TicketStatus {
	v.State, v.StockLeft, v.EstimatedWaitMs, v.EstimatedAdmissionAt, v.AdmissionGrant, v.GrantExpiresAt = api.TicketSoldOut, 0, nil, nil, "", nil
	return v
}

// waitingView is waiting view v of ticket t with the watcher's reads and
// the estimate they give, at the end of a wait that saw no change: a
// ticket with a place, its positions to go; one whose round is open, the
// time to the close and its expected place then (openWait).
func (r *Room) waitingView(ctx context.Context, it Item, t Ticket, v api.TicketStatus, wi *watchedItem) api.TicketStatus {
	serving, tickets, read, ok := wi.gateNow()
	if v.State != api.TicketWaiting || !ok {
		return v
	}
	switch {
	case v.Position != nil:
		v.ServingPosition = &serving
		r.withEstimate(&v, r.placedWait(it, *v.Position, serving, read))
	case v.RoundClosesAt != nil:
		r.withEstimate(&v, r.openWait(ctx, it, t, *v.RoundClosesAt, time.Now(), serving, read, tickets))
	default:
		return v
	}
	if left, ok := wi.stockNow(); ok {
		v.StockLeft = max(left, 0)
	}
	return v
}

// admittedView is waiting view v once the watcher saw the gate reach its
// position: admitted, with a fresh grant (a cached key and an HMAC), or
// sold out. The stock is read from Redis, not taken from the watcher: its
// read of the stock may predate the sell-out by an interval (view says why
// admitted must not be answered on it). On a failed read the poll answers
// v, as one that saw nothing change.
func (r *Room) admittedView(ctx context.Context, it Item, t Ticket, v api.TicketStatus, wi *watchedItem) api.TicketStatus {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	left, warmed, err := r.st.Stock(rctx, it.ID)
	cancel()
	if err != nil {
		return v
	}
	if warmed && left <= 0 {
		return soldOutView(v)
	}
	g, exp, err := r.Grant(ctx, it.ID, t.UserID)
	if err != nil {
		return v
	}
	serving, _ := wi.servingNow()
	var zero int64
	v.State, v.ServingPosition, v.EstimatedWaitMs, v.EstimatedAdmissionAt, v.AdmissionGrant, v.GrantExpiresAt = api.TicketAdmitted, &serving, &zero, nil, g, &exp
	v.StockLeft = max(left, 0)
	return v
}
