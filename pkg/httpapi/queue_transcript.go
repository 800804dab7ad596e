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

// getTranscript is GET /api/v1/items/{id}/transcript: from starts_at on, the
// item's seed, its commitment and every ticket's hash in serving order
// (waitroom.Transcript), so anyone can check the order follows from the
// committed seed and a buyer their own rank. Before starts_at it is 409
// not_revealed: the seed is never shown before the start. Public, like the
// item: it names no buyer (hashes of server-drawn ids only).
func (s *Server) getTranscript(c echo.Context) error {
	ctx := c.Request().Context()
	it, err := s.queuedItem(c)
	if err != nil {
		return err
	}
	id := it.ID
	if time.Now().Before(it.StartsAt) {
		return newErr(http.StatusConflict, "not_revealed", "the seed is revealed at starts_at, "+it.StartsAt.UTC().Format(time.RFC3339Nano))
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	tr, err := waitroom.Transcript(rctx, s.db, s.wr, it)
	if errors.Is(err, store.ErrNotFound) {
		return newErr(http.StatusConflict, "queue_off", "this item has no waiting room")
	}
	if err != nil {
		s.log.WarnContext(ctx, "queue: transcript", "item_id", id, "err", err)
		return unavailable("transcript temporarily unavailable")
	}
	return c.JSON(http.StatusOK, tr)
}
