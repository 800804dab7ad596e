package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// ticketView is a buyer's ticket as POST .../queue answers it (Ticket in
// ingress/openapi.yaml): its id (the buyer's to keep: with the arrival
// number it is what the buyer checks the transcript with), its arrival
// number and the commitment it was taken under.
type ticketView struct {
	Ticket          string    `json:"ticket"`
	ItemID          int64     `json:"item_id"`
	Arrival         int64     `json:"arrival"`
	TakenAt         time.Time `json:"taken_at"`
	QueueCommitment string    `json:"queue_commitment"`
}

// queuedItem is the item of the path's {id} when it has a waiting room:
// 404 for an unknown item, 409 queue_off for one without the queue.
func (s *Server) queuedItem(c echo.Context) (store.Item, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return store.Item{}, err
	}
	it, err := s.loadItem(c.Request().Context(), id)
	if err != nil {
		return store.Item{}, err
	}
	if !it.Queue {
		return store.Item{}, newErr(http.StatusConflict, "queue_off", "this item has no waiting room: order it directly")
	}
	return it, nil
}

// takeTicket is POST /api/v1/items/{id}/queue: the caller's ticket of the
// item's waiting room, 201 when this call took it, 200 when the caller held
// it already (one per buyer per item, whatever is asked again).
func (s *Server) takeTicket(c echo.Context) error {
	ctx := c.Request().Context()
	it, err := s.queuedItem(c)
	if err != nil {
		return err
	}
	id := it.ID
	fresh, err := draw.NewTicketID(nil)
	if err != nil {
		s.log.ErrorContext(ctx, "queue: ticket id", "err", err)
		return unavailable("ticket temporarily unavailable")
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	left, warmed, err := s.st.Stock(rctx, id)
	if err != nil {
		return unavailable("ticket temporarily unavailable")
	}
	t, created, err := s.wr.TakeTicket(rctx, id, principal(c).UserID, fresh, it.QueueOpensAt, warmed && left <= 0)
	switch {
	case errors.Is(err, waitroom.ErrNotOpen):
		return newErr(http.StatusConflict, "queue_not_open", "the waiting room opens at "+it.QueueOpensAt.UTC().Format(time.RFC3339Nano))
	case errors.Is(err, waitroom.ErrEnded):
		return newErr(http.StatusGone, "sale_ended", "the sale has ended")
	case errors.Is(err, waitroom.ErrSoldOut):
		return newErr(http.StatusGone, "sold_out", "the item is sold out")
	case errors.Is(err, waitroom.ErrNotWarmed):
		return notFound("no such item")
	case err != nil:
		s.log.WarnContext(ctx, "queue: take ticket", "item_id", id, "err", err)
		return unavailable("ticket temporarily unavailable")
	}
	status, result := http.StatusOK, "have"
	if created {
		status, result = http.StatusCreated, "new"
	}
	s.m.tickets.WithLabelValues(result).Inc()
	return c.JSON(status, ticketView{Ticket: t.ID, ItemID: id, Arrival: t.Arrival, TakenAt: t.TakenAt, QueueCommitment: it.QueueCommitment})
}
