package waitroom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/api"
)

// Status is user's ticket id of queued item it: ErrNoTicket when there is
// no such ticket or it is another buyer's. With wait > 0 it answers once
// the state changes (sold out, the shuffle at starts_at, the gate reaching
// the ticket, the end; for a sold-out ticket a waitlist offer or stock
// again) or at the end of the wait, whichever is first.
func (r *Room) Status(ctx context.Context, it Item, user int64, id string, wait time.Duration) (api.TicketStatus, error) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	t, found, err := r.tickets.ticket(rctx, r.wr, it.ID, id)
	cancel()
	if err != nil {
		return api.TicketStatus{}, fmt.Errorf("ticket of item %d: %w", it.ID, ErrUnavailable)
	}
	if !found || t.UserID != user {
		return api.TicketStatus{}, ErrNoTicket
	}
	v, err := r.view(ctx, it, t)
	if err != nil {
		return api.TicketStatus{}, err
	}
	switch {
	case wait > 0 && (v.State == api.TicketWaiting || v.State == api.TicketAdmitted):
		v = r.awaitTicket(ctx, it, t, v, wait)
	case wait > 0 && v.State == api.TicketSoldOut && time.Now().Before(it.EndsAt):
		v = r.awaitOffer(ctx, it, t, v, wait)
	}
	return v, nil
}

// ValidTicketID reports whether v is a ticket id as draw.NewTicketID makes
// them: 32 lower-case hex digits.
func ValidTicketID(v string) bool {
	if len(v) != 32 {
		return false
	}
	for _, r := range v {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

// unavailableView is the error a ticket read answers when a store does not.
var unavailableView = fmt.Errorf("ticket: %w", ErrUnavailable)

// view is ticket t's state now: admitted once starts_at has passed and the
// gate's serving position has reached the ticket's position.
func (r *Room) view(ctx context.Context, it Item, t Ticket) (api.TicketStatus, error) {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	defer cancel()
	// The item's stock and gate as this replica last read them (at most an
	// interval and a half ago), shared by every ticket read (itemReads).
	snap, err := r.read(rctx, it.ID)
	if err != nil {
		return api.TicketStatus{}, unavailableView
	}
	left, warmed, serving := snap.left, snap.warmed, snap.serving
	v := api.TicketStatus{Ticket: t.ID, ItemID: it.ID, Arrival: t.Arrival, StockLeft: max(left, 0), ShuffleAt: DrawAt(it).UTC()}
	withRound(&v, it, t)
	now := time.Now()
	switch {
	case warmed && left <= 0:
		v.State = api.TicketSoldOut
	case !now.Before(it.EndsAt):
		v.State = api.TicketExpired
	case v.RoundClosesAt != nil && now.Before(*v.RoundClosesAt):
		// Its round is open by this replica's clock: no place yet, and
		// no draw of its round to read (a later round's estimate reads
		// where the earlier rounds end: openWait).
		v.State = api.TicketWaiting
		r.withEstimate(&v, r.openWait(ctx, it, t, *v.RoundClosesAt, now, serving, snap.at, snap.tickets))
		return v, nil
	}
	pos, err := r.position(ctx, it, t)
	if errors.Is(err, ErrRoundOpen) {
		// No place in line until the round closes: waiting (or where it
		// stands, sold out or ended), with the time to the close and the
		// expected wait for its place after it (openWait).
		if v.State == "" {
			v.State = api.TicketWaiting
			r.withEstimate(&v, r.openWait(ctx, it, t, *v.RoundClosesAt, now, serving, snap.at, snap.tickets))
		}
		return v, nil
	}
	if err != nil {
		return api.TicketStatus{}, err
	}
	r.withProof(ctx, &v, it, t)
	ahead := pos - 1
	v.Position, v.Ahead, v.ServingPosition = &pos, &ahead, &serving
	if v.State == "" && pos <= serving {
		// The shared read may predate the sell-out by up to an interval
		// and a half, and admitted is the one answer a stale stock makes
		// false: the buyer would order and get 410. So the stock that
		// admits is read from Redis, the store whose last DECR sold out
		// (one read, for tickets whose turn has come; the waiting ones
		// keep the shared read).
		l, w, err := r.st.Stock(rctx, it.ID)
		if err != nil {
			return api.TicketStatus{}, unavailableView
		}
		if v.StockLeft = max(l, 0); w && l <= 0 {
			v.State = api.TicketSoldOut
		}
	}
	if v.State == api.TicketSoldOut && now.Before(it.EndsAt) {
		return r.offeredView(rctx, it, t, v)
	}
	if v.State != "" {
		return v, nil // sold out or ended: where it stood, and no estimate
	}
	if pos > serving {
		v.State = api.TicketWaiting
		r.withEstimate(&v, r.placedWait(it, pos, serving, snap.at))
		return v, nil
	}
	grant, exp, err := r.Grant(ctx, it.ID, t.UserID)
	if err != nil {
		return api.TicketStatus{}, err
	}
	var zero int64
	v.State, v.EstimatedWaitMs, v.AdmissionGrant, v.GrantExpiresAt = api.TicketAdmitted, &zero, grant, &exp
	return v, nil
}

// offeredView is sold-out view v of ticket t, or its offer when the
// waitlist holds a unit for its buyer: one more Redis read, made only for a
// ticket of a sold-out item.
func (r *Room) offeredView(ctx context.Context, it Item, t Ticket, v api.TicketStatus) (api.TicketStatus, error) {
	o, ok, err := r.wr.OfferOf(ctx, it.ID, t.UserID)
	if err != nil {
		return api.TicketStatus{}, unavailableView
	}
	if !ok || o.Ticket != t.ID || !time.Now().Before(o.Expires) {
		return v, nil
	}
	g, err := r.offerGrant(ctx, it.ID, t.UserID, o.Expires)
	if err != nil {
		return api.TicketStatus{}, err
	}
	exp := o.Expires.UTC()
	v.State, v.AdmissionGrant, v.GrantExpiresAt = api.TicketOffered, g, &exp
	return v, nil
}

// position is t's place in item it's serving order (Positions):
// ErrRoundOpen while its round is open, ErrUnavailable when it cannot be
// told.
func (r *Room) position(ctx context.Context, it Item, t Ticket) (int64, error) {
	pos, err := r.positions.Position(ctx, it, t)
	switch {
	case errors.Is(err, ErrRoundOpen):
		return 0, err
	case errors.Is(err, ErrMissing):
		r.log.ErrorContext(ctx, "queue: a ticket taken before starts_at is missing from the order", "item_id", it.ID, "ticket", t.ID)
	case err != nil && ctx.Err() == nil:
		r.log.WarnContext(ctx, "queue: draw the order", "item_id", it.ID, "err", err)
	}
	if err != nil {
		return 0, unavailableView
	}
	return pos, nil
}

// withRound sets v's round and its close, for a ticket drawn in a round.
func withRound(v *api.TicketStatus, it Item, t Ticket) {
	k := RoundOf(it, t.TakenAt)
	if k == Late {
		return
	}
	closes := roundEnd(it, k).UTC()
	v.Round, v.RoundClosesAt = &k, &closes
}

// withProof sets v's inclusion proof once t's round is closed and drawn;
// a proof that cannot be read leaves it out (the position stands).
func (r *Room) withProof(ctx context.Context, v *api.TicketStatus, it Item, t Ticket) {
	if pr, ok, err := r.positions.Proof(ctx, it, t); err == nil && ok {
		v.Proof = pr
	}
}
