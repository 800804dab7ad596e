package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// The states of a ticket (TicketStatus in ingress/openapi.yaml).
const (
	ticketWaiting  = "waiting"
	ticketAdmitted = "admitted"
	ticketSoldOut  = "sold_out"
	ticketExpired  = "expired"
	// ticketOffered: the item sold out, and the waitlist holds a released
	// unit for this ticket's buyer until grant_expires_at (pkg/waitroom
	// waitlist.go); the order sends the offer's admission_grant.
	ticketOffered = "offered"
)

// ticketStatus is GET /api/v1/items/{id}/queue/{ticket}'s answer.
type ticketStatus struct {
	Ticket  string `json:"ticket"`
	ItemID  int64  `json:"item_id"`
	Arrival int64  `json:"arrival"`
	State   string `json:"state"`
	// Position is the ticket's place in the serving order (1 first) and
	// Ahead the tickets before it; both absent before starts_at, when the
	// order is not drawn yet.
	Position *int64 `json:"position,omitempty"`
	Ahead    *int64 `json:"ahead,omitempty"`
	// ServingPosition is how many positions the gate has admitted (from
	// starts_at on): the ticket is admitted once it reaches Position.
	ServingPosition *int64 `json:"serving_position,omitempty"`
	// EstimatedWaitMs is how long until the ticket is admitted: until
	// starts_at before it, then the positions before it still to admit at
	// the item's queue_rate; 0 once admitted; absent when it will not be
	// (sold out, expired).
	EstimatedWaitMs *int64    `json:"estimated_wait_ms,omitempty"`
	StockLeft       int64     `json:"stock_left"`
	ShuffleAt       time.Time `json:"shuffle_at"`
	// AdmissionGrant, with GrantExpiresAt, is what an admitted ticket's
	// order sends (pkg/waitroom); every read hands out a fresh one.
	AdmissionGrant string     `json:"admission_grant,omitempty"`
	GrantExpiresAt *time.Time `json:"grant_expires_at,omitempty"`
}

// getTicket is GET /api/v1/items/{id}/queue/{ticket}: the caller's ticket
// (another buyer's is 404, as an unknown one), and with ?wait= the answer
// once its state changes (sold out, the shuffle at starts_at, the end; for
// a sold-out ticket a waitlist offer or stock again) or at the end of the
// wait.
func (s *Server) getTicket(c echo.Context) error {
	_, sent := c.QueryParams()["wait"]
	wait, err := parseWait(c.QueryParam("wait"), sent, s.cfg.Ingress.StatusWaitMax)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	tid := c.Param("ticket")
	if !validTicketID(tid) {
		return badRequest("invalid_ticket", "ticket must be 32 lower-case hex digits")
	}
	it, err := s.loadItem(ctx, id)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	t, found, err := s.tickets.ticket(rctx, s.wr, id, tid)
	cancel()
	if err != nil {
		return unavailable("ticket temporarily unavailable")
	}
	if !found || t.UserID != principal(c).UserID {
		return notFound("no such ticket")
	}
	v, err := s.ticketView(ctx, it, t)
	if err != nil {
		return err
	}
	switch {
	case wait > 0 && (v.State == ticketWaiting || v.State == ticketAdmitted):
		v = s.awaitTicket(ctx, it, t, v, wait)
	case wait > 0 && v.State == ticketSoldOut && time.Now().Before(it.EndsAt):
		v = s.awaitOffer(ctx, it, t, v, wait)
	}
	return c.JSON(http.StatusOK, v)
}

// validTicketID reports whether v is a ticket id as NewTicketID makes them.
func validTicketID(v string) bool {
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

// ticketView is ticket t's state now: admitted once starts_at has passed
// and the gate's serving position has reached the ticket's position.
func (s *Server) ticketView(ctx context.Context, it store.Item, t waitroom.Ticket) (ticketStatus, error) {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	// What this replica's reader of the item read in the last interval
	// and a half stands for a read of our own.
	left, serving, cached := s.queueWatch.fresh(it.ID, 150*time.Millisecond)
	warmed := cached
	if !cached {
		var err error
		if left, warmed, err = s.st.Stock(rctx, it.ID); err != nil {
			return ticketStatus{}, unavailable("ticket temporarily unavailable")
		}
	}
	v := ticketStatus{Ticket: t.ID, ItemID: it.ID, Arrival: t.Arrival, StockLeft: max(left, 0), ShuffleAt: it.StartsAt.UTC()}
	now := time.Now()
	switch {
	case warmed && left <= 0:
		v.State = ticketSoldOut
	case !now.Before(it.EndsAt):
		v.State = ticketExpired
	case now.Before(it.StartsAt):
		v.State = ticketWaiting
		ms := it.StartsAt.Sub(now).Milliseconds()
		v.EstimatedWaitMs = &ms
		return v, nil
	}
	pos, err := s.position(ctx, it, t)
	if err != nil {
		return ticketStatus{}, err
	}
	if !cached {
		g, err := s.wr.ReadGate(rctx, it.ID)
		if err != nil {
			return ticketStatus{}, unavailable("ticket temporarily unavailable")
		}
		serving = g.Serving
	}
	ahead := pos - 1
	v.Position, v.Ahead, v.ServingPosition = &pos, &ahead, &serving
	if cached && v.State == "" && pos <= serving {
		// The reader's stock may predate the sell-out by up to its
		// interval and a half, and admitted is the one answer a stale
		// stock makes false: the buyer would order and get 410. So the
		// stock that admits is read from Redis, the store whose last
		// DECR sold out (one read, for tickets whose turn has come; the
		// waiting ones keep the reader's).
		l, w, err := s.st.Stock(rctx, it.ID)
		if err != nil {
			return ticketStatus{}, unavailable("ticket temporarily unavailable")
		}
		if v.StockLeft = max(l, 0); w && l <= 0 {
			v.State = ticketSoldOut
		}
	}
	if v.State == ticketSoldOut && now.Before(it.EndsAt) && it.Buckets <= 1 {
		return s.offeredView(rctx, it, t, v)
	}
	if v.State != "" {
		return v, nil // sold out or ended: where it stood, and no estimate
	}
	if pos > serving {
		v.State = ticketWaiting
		ms := waitroom.AdmitIn(pos-serving, it.QueueRate).Milliseconds()
		v.EstimatedWaitMs = &ms
		return v, nil
	}
	grant, exp, err := s.grantFor(ctx, it.ID, t.UserID)
	if err != nil {
		return ticketStatus{}, err
	}
	var zero int64
	v.State, v.EstimatedWaitMs, v.AdmissionGrant, v.GrantExpiresAt = ticketAdmitted, &zero, grant, &exp
	return v, nil
}

// offeredView is sold-out view v of ticket t, or its offer when the
// waitlist holds a unit for its buyer: one more Redis read, made only for a
// ticket of a sold-out item.
func (s *Server) offeredView(ctx context.Context, it store.Item, t waitroom.Ticket, v ticketStatus) (ticketStatus, error) {
	o, ok, err := s.wr.OfferOf(ctx, it.ID, t.UserID)
	if err != nil {
		return ticketStatus{}, unavailable("ticket temporarily unavailable")
	}
	if !ok || o.Ticket != t.ID || !time.Now().Before(o.Expires) {
		return v, nil
	}
	g, err := s.offerGrantFor(ctx, it.ID, t.UserID, o.Expires)
	if err != nil {
		return ticketStatus{}, err
	}
	exp := o.Expires.UTC()
	v.State, v.AdmissionGrant, v.GrantExpiresAt = ticketOffered, g, &exp
	return v, nil
}

// awaitTicket waits for ticket t's state to leave v's: the item selling out
// or the gate reaching the ticket's position (queueWatch), ends_at, or the
// wait's end. A poll waiting across starts_at learns its position there,
// from this replica's drawn order, and goes on waiting for the gate rather
// than answering: every waiting poll of an item answering and asking again
// at the start was a herd that slowed the first admissions' orders (bench
// -bots-compare: 202 p99 766 ms with the queue against 209 without). The
// sell-out and the admission are answered from the watcher's reads, not a
// Redis read per waiter, so thousands of polls waking at once cost nothing
// more (the sell-out reached 8,540 waiters in up to 1.59 s when each read
// again).
func (s *Server) awaitTicket(ctx context.Context, it store.Item, t waitroom.Ticket, v ticketStatus, wait time.Duration) ticketStatus {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	wi := s.queueWatch.acquire(it.ID)
	defer s.queueWatch.release(it.ID, wi)
	var start <-chan time.Time
	if v.State == ticketWaiting && time.Now().Before(it.StartsAt) {
		st := time.NewTimer(time.Until(it.StartsAt))
		defer st.Stop()
		start = st.C
	}
	end := time.NewTimer(time.Until(it.EndsAt))
	defer end.Stop()
	for {
		serving, ok, moved := wi.servingNow()
		if v.State == ticketWaiting && v.Position != nil && ok && serving >= *v.Position {
			return s.admittedView(ctx, it, t, v, wi)
		}
		if v.State != ticketWaiting || v.Position == nil {
			moved = nil // nothing to learn from the gate
		}
		select {
		case <-wi.sold:
			return soldOutView(v)
		case <-start:
			start = nil
			pos, err := s.position(ctx, it, t)
			if err != nil {
				return v
			}
			ahead := pos - 1
			v.Position, v.Ahead = &pos, &ahead
		case <-moved:
		case <-end.C:
			if nv, err := s.ticketView(ctx, it, t); err == nil {
				return nv
			}
			return v
		case <-deadline.C:
			return waitingView(v, wi, it.QueueRate)
		case <-ctx.Done():
			return v
		case <-s.waits.done:
			return v
		}
	}
}

// awaitOffer waits, for sold-out ticket t (view v), until the waitlist
// offers its buyer a unit (offered, with the offer's grant), the item has
// stock again (a restock, or the waitlist giving its units back: the
// ticket is read again), ends_at, or the wait's end. Both are answered
// from offerWatch's reads, not a Redis read per waiter.
func (s *Server) awaitOffer(ctx context.Context, it store.Item, t waitroom.Ticket, v ticketStatus, wait time.Duration) ticketStatus {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	end := time.NewTimer(time.Until(it.EndsAt))
	defer end.Stop()
	oi := s.offerWatch.acquire(it.ID)
	defer s.offerWatch.release(it.ID, oi)
	for {
		o, found, left, read, changed := oi.now(t.UserID)
		if found && o.Ticket == t.ID && time.Now().Before(o.Expires) && it.Buckets <= 1 {
			g, err := s.offerGrantFor(ctx, it.ID, t.UserID, o.Expires)
			if err != nil {
				return v
			}
			exp := o.Expires.UTC()
			v.State, v.AdmissionGrant, v.GrantExpiresAt = ticketOffered, g, &exp
			return v
		}
		if read && left > 0 {
			if nv, err := s.ticketView(ctx, it, t); err == nil {
				return nv
			}
			return v
		}
		select {
		case <-changed:
		case <-end.C:
			if nv, err := s.ticketView(ctx, it, t); err == nil {
				return nv
			}
			return v
		case <-deadline.C:
			return v
		case <-ctx.Done():
			return v
		case <-s.waits.done:
			return v
		}
	}
}

// soldOutView is waiting view v once the watcher read the item sold out.
func soldOutView(v ticketStatus) ticketStatus {
	v.State, v.StockLeft, v.EstimatedWaitMs, v.AdmissionGrant, v.GrantExpiresAt = ticketSoldOut, 0, nil, "", nil
	return v
}

// waitingView is waiting view v with the watcher's serving position and the
// estimate it gives, at the end of a wait that saw no change.
func waitingView(v ticketStatus, wi *watchedItem, rate int) ticketStatus {
	serving, ok, _ := wi.servingNow()
	if v.State != ticketWaiting || v.Position == nil || !ok {
		return v
	}
	ms := waitroom.AdmitIn(*v.Position-serving, rate).Milliseconds()
	v.ServingPosition, v.EstimatedWaitMs = &serving, &ms
	if left, ok := wi.stockNow(); ok {
		v.StockLeft = max(left, 0)
	}
	return v
}

// admittedView is waiting view v once the watcher saw the gate reach its
// position: admitted, with a fresh grant (a cached key and an HMAC), or
// sold out. The stock is read from Redis, not taken from the watcher: its
// read of the stock may predate the sell-out by an interval (ticketView
// says why admitted must not be answered on it). On a failed read the poll
// answers v, as one that saw nothing change.
func (s *Server) admittedView(ctx context.Context, it store.Item, t waitroom.Ticket, v ticketStatus, wi *watchedItem) ticketStatus {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	left, warmed, err := s.st.Stock(rctx, it.ID)
	cancel()
	if err != nil {
		return v
	}
	if warmed && left <= 0 {
		return soldOutView(v)
	}
	g, exp, err := s.grantFor(ctx, it.ID, t.UserID)
	if err != nil {
		return v
	}
	serving, _, _ := wi.servingNow()
	var zero int64
	v.State, v.ServingPosition, v.EstimatedWaitMs, v.AdmissionGrant, v.GrantExpiresAt = ticketAdmitted, &serving, &zero, g, &exp
	v.StockLeft = max(left, 0)
	return v
}

// position is t's place in item it's serving order (waitroom.Positions),
// or the 503 a poll answers when it cannot be told.
func (s *Server) position(ctx context.Context, it store.Item, t waitroom.Ticket) (int64, error) {
	pos, err := s.positions.Position(ctx, it, t)
	switch {
	case errors.Is(err, waitroom.ErrMissing):
		s.log.ErrorContext(ctx, "queue: a ticket taken before starts_at is missing from the order", "item_id", it.ID, "ticket", t.ID)
	case err != nil && ctx.Err() == nil:
		s.log.WarnContext(ctx, "queue: draw the order", "item_id", it.ID, "err", err)
	}
	if err != nil {
		return 0, unavailable("ticket temporarily unavailable")
	}
	return pos, nil
}
