package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// queueOf is an item's waiting room as the item answers show it.
func queueOf(it store.Item) api.ItemQueue {
	if !it.Queue {
		return api.ItemQueue{}
	}
	opens := it.QueueOpensAt.UTC()
	return api.ItemQueue{Queue: true, QueueOpensAt: &opens, QueueCommitment: it.QueueCommitment, QueueRate: it.QueueRate,
		QueueShuffleWindowMs: it.QueueShuffleWindow.Milliseconds(), QueueRoundMs: it.QueueRound.Milliseconds()}
}

func toAdminItem(it store.Item) api.AdminItem {
	return api.AdminItem{ID: it.ID, Name: it.Name, PriceCents: it.PriceCents, TotalStock: it.TotalStock, Stock: it.Stock,
		PerUserLimit: it.PerUserLimit, StartsAt: it.StartsAt.UTC(), EndsAt: it.EndsAt.UTC(), Buckets: max(it.Buckets, 1),
		State: saleState(it, time.Now()), ItemQueue: queueOf(it)}
}

// putItem is PUT /api/v1/admin/items/{id}: create or update, then warm.
func (s *Server) putItem(c echo.Context) error {
	id, b, err := adminBody[catalog.Input](c, catalog.InputKinds, echo.MIMEApplicationJSON)
	if err != nil {
		return err
	}
	it, err := s.catalog.PutInput(c.Request().Context(), id, b, s.cfg.Ingress.Buckets.Max)
	return s.savedItem(c, id, it, err)
}

// savedItem answers a PUT or PATCH: the item saved (and warmed), or why not.
func (s *Server) savedItem(c echo.Context, id int64, it store.Item, err error) error {
	var invalid *catalog.InvalidError
	var kept *catalog.QueueKeptError
	switch {
	case errors.As(err, &invalid): // the body's own rules (a PATCH's checked under the row lock)
		return badRequest(invalid.Code, invalid.Message)
	case errors.As(err, &kept):
		return newErr(http.StatusConflict, "queue_kept", kept.Error())
	}
	if errors.Is(err, catalog.ErrNotWarmed) {
		s.forgetItem(id) // MySQL changed
		s.log.WarnContext(c.Request().Context(), "item saved but not warmed", "item_id", id, "err", err)
		return &apiError{Status: http.StatusServiceUnavailable, Code: "not_warmed", RetryAfter: time.Second,
			Message: "the item is saved, but Redis could not be rebuilt from it; repeat the request or POST .../warm once requests have settled"}
	}
	if err != nil {
		return s.catalogError(c, err)
	}
	s.forgetItem(id)
	s.log.InfoContext(c.Request().Context(), "item saved", "item_id", id, "total_stock", it.TotalStock)
	return c.JSON(http.StatusOK, toAdminItem(it))
}

// warmItem is POST /api/v1/admin/items/{id}/warm.
func (s *Server) warmItem(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	it, err := s.catalog.Warm(c.Request().Context(), id)
	if err != nil {
		return s.catalogError(c, err)
	}
	s.log.InfoContext(c.Request().Context(), "item warmed", "item_id", id, "stock", it.Stock)
	return c.JSON(http.StatusOK, toAdminItem(it))
}

func (s *Server) catalogError(c echo.Context, err error) error {
	var open *catalog.TransfersOpenError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("no such item")
	case errors.Is(err, store.ErrHasOrders):
		return newErr(http.StatusConflict, "has_orders", "the stock of an item with orders cannot change")
	case errors.Is(err, catalog.ErrSaleOpen):
		return newErr(http.StatusConflict, "sale_open", "the bucket count cannot change while the sale window is open or within a minute of it;"+
			" close the window (PUT with the same buckets), change the count, then open it again")
	case errors.Is(err, catalog.ErrQueueOpen):
		return newErr(http.StatusConflict, "queue_open", "the queue has opened: it can no longer be turned off or its queue_opens_at moved")
	case errors.As(err, &open):
		return newErr(http.StatusConflict, "in_flight", open.Advice())
	case errors.Is(err, store.ErrTransfersOpen):
		return newErr(http.StatusConflict, "in_flight", "stock is moving between this item's buckets; retry when the transfers have finished")
	case errors.Is(err, store.ErrStockChangesPending):
		return newErr(http.StatusConflict, "in_flight", "a stock change (POST .../stock) of this item is not finished; repeat it with its operation_id, or retry when the reaper has finished it")
	case errors.Is(err, catalog.ErrInFlight):
		return newErr(http.StatusConflict, "in_flight", "requests for this item are still in flight; retry when they have settled")
	}
	s.log.WarnContext(c.Request().Context(), "admin: store unavailable", "err", err)
	return unavailable("a store is unavailable; nothing was changed")
}

// auditItem is GET /api/v1/admin/items/{id}/audit.
func (s *Server) auditItem(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	rep, err := audit.Item(c.Request().Context(), s.db, s.st, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return notFound("no such item")
	case errors.Is(err, stock.ErrUnavailable):
		return unavailable("redis unavailable")
	case err != nil:
		s.log.WarnContext(c.Request().Context(), "audit failed", "err", err)
		return unavailable("audit temporarily unavailable")
	}
	return c.JSON(http.StatusOK, rep)
}
