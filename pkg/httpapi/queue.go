package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// The waiting room's routes: thin adapters over waitroom.Room, which holds
// every rule; here the path, the caller and the wait are read and the
// room's answers and refusals turned into the contract's.

// queuedItem is the waiting room's view of the path's {id} when it has a
// waiting room: 404 for an unknown item, 409 queue_off for one without the
// queue.
func (s *Server) queuedItem(c echo.Context) (waitroom.Item, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return waitroom.Item{}, err
	}
	it, err := s.roomItem(c, id)
	if err != nil {
		return waitroom.Item{}, err
	}
	if !it.Queue {
		return waitroom.Item{}, errQueueOff
	}
	return it, nil
}

// roomItem is the waiting room's view of item id (waitroom.Room.Item):
// 404 for an unknown item, 503 when MySQL does not answer.
func (s *Server) roomItem(c echo.Context, id int64) (waitroom.Item, error) {
	it, err := s.room.Item(c.Request().Context(), id)
	if err != nil {
		return waitroom.Item{}, roomError(err, it, "item")
	}
	return it, nil
}

// Answers of the waiting room's routes, and of an order of a queued item
// whose grant does not do.
var (
	errQueueOff      = newErr(http.StatusConflict, "queue_off", "this item has no waiting room: order it directly")
	errGrantRequired = newErr(http.StatusForbidden, "admission_required",
		"this item has a waiting room: take a ticket (POST /api/v1/items/{id}/queue), wait until it is admitted, and order with its admission_grant")
	errGrantInvalid = newErr(http.StatusForbidden, "admission_invalid",
		"admission_grant is not a grant of this item for you: order with the grant your own admitted ticket shows")
	errGrantExpired = newErr(http.StatusForbidden, "admission_expired",
		"admission_grant has expired: read your ticket again (GET /api/v1/items/{id}/queue/{ticket}) for a fresh one")
	errOfferGone = newErr(http.StatusForbidden, "offer_gone",
		"your waitlist offer was claimed already or its claim window ended; nothing was reserved")
)

// takeTicket is POST /api/v1/items/{id}/queue: the caller's ticket of the
// item's waiting room, 201 when this call took it, 200 when the caller held
// it already.
func (s *Server) takeTicket(c echo.Context) error {
	it, err := s.queuedItem(c)
	if err != nil {
		return err
	}
	t, created, err := s.room.Take(c.Request().Context(), it, principal(c).UserID)
	if err != nil {
		return roomError(err, it, "ticket")
	}
	if created {
		return c.JSON(http.StatusCreated, t)
	}
	return c.JSON(http.StatusOK, t)
}

// getTicket is GET /api/v1/items/{id}/queue/{ticket}: the caller's ticket
// (another buyer's is 404, as an unknown one), and with ?wait= the answer
// once its state changes or at the end of the wait (waitroom.Room.Status).
func (s *Server) getTicket(c echo.Context) error {
	_, sent := c.QueryParams()["wait"]
	wait, err := parseWait(c.QueryParam("wait"), sent, s.cfg.Ingress.StatusWaitMax)
	if err != nil {
		return err
	}
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	tid := c.Param("ticket")
	if !waitroom.ValidTicketID(tid) {
		return badRequest("invalid_ticket", "ticket must be 32 lower-case hex digits")
	}
	it, err := s.roomItem(c, id)
	if err != nil {
		return err
	}
	v, err := s.room.Status(c.Request().Context(), it, principal(c).UserID, tid, wait)
	if err != nil {
		return roomError(err, it, "ticket")
	}
	return c.JSON(http.StatusOK, v)
}

// getTranscript is GET /api/v1/items/{id}/transcript: from starts_at on, the
// item's seed, its commitment and every ticket's hash in serving order, so
// anyone can check the order follows from the committed seed and a buyer
// their own rank. Before starts_at it is 409 not_revealed. Public, like the
// item: it names no buyer (hashes of server-drawn ids only).
func (s *Server) getTranscript(c echo.Context) error {
	it, err := s.queuedItem(c)
	if err != nil {
		return err
	}
	tr, err := s.room.Transcript(c.Request().Context(), it)
	if err != nil {
		return roomError(err, it, "transcript")
	}
	return c.JSON(http.StatusOK, tr)
}

// getReceiptKey is GET /.well-known/flashsale-receipt-key: the public key
// that signs ticket receipts (docs/fairness.md), public and cacheable for
// a minute: it changes only if an operator replaces the deployment's key.
func (s *Server) getReceiptKey(c echo.Context) error {
	k, err := s.room.ReceiptKey(c.Request().Context())
	if err != nil {
		return unavailable("receipt key temporarily unavailable")
	}
	c.Response().Header().Set("Cache-Control", "public, max-age=60")
	return c.JSON(http.StatusOK, k)
}

// roomError is the contract's answer to a refusal of the waiting room of
// item it; what names what was asked for in a 503.
func roomError(err error, it waitroom.Item, what string) error {
	switch {
	case errors.Is(err, waitroom.ErrNotOpen):
		return newErr(http.StatusConflict, "queue_not_open", "the waiting room opens at "+it.QueueOpensAt.UTC().Format(time.RFC3339Nano))
	case errors.Is(err, waitroom.ErrNotRevealed):
		return newErr(http.StatusConflict, "not_revealed", "the seed is revealed at starts_at, "+it.StartsAt.UTC().Format(time.RFC3339Nano))
	case errors.Is(err, store.ErrNotFound):
		return newErr(http.StatusConflict, "queue_off", "this item has no waiting room")
	case errors.Is(err, waitroom.ErrEnded):
		return newErr(http.StatusGone, "sale_ended", "the sale has ended")
	case errors.Is(err, waitroom.ErrSoldOut):
		return newErr(http.StatusGone, "sold_out", "the item is sold out")
	case errors.Is(err, waitroom.ErrNotWarmed), errors.Is(err, waitroom.ErrNoItem):
		return notFound("no such item")
	case errors.Is(err, waitroom.ErrNoTicket):
		return notFound("no such ticket")
	case errors.Is(err, waitroom.ErrGrantExpired):
		return errGrantExpired
	case errors.Is(err, waitroom.ErrGrantInvalid):
		return errGrantInvalid
	case errors.Is(err, waitroom.ErrOfferGone):
		return errOfferGone
	}
	return unavailable(what + " temporarily unavailable")
}
