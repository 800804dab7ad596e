package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// heldOrder is GET /api/v1/orders?item_id=N: the request by which the
// caller holds the item (pending, unpaid, paid or cancelled), for a buyer
// who lost the answer to their order (a dropped connection, a 503
// outcome_unknown without an Idempotency-Key) and now gets 409
// already_purchased. At most one request per buyer and item holds it, so
// the answer is one status, not a list.
//
// Redis first: the buyer mark names the request (one round trip, then the
// usual status lookup). MySQL only when Redis does not have the item (lost
// its data, not warmed yet): the order by the UNIQUE (user_id, item_id) key.
func (s *Server) heldOrder(c echo.Context) error {
	ctx := c.Request().Context()
	raw := c.QueryParam("item_id")
	item, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || item <= 0 || strconv.FormatInt(item, 10) != raw {
		return badRequest("invalid_item_id", "item_id must be a positive 64-bit decimal integer")
	}
	user := principal(c).UserID
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	rid, held, warmed, err := s.heldBy(rctx, item, user)
	cancel()
	if err != nil {
		s.log.WarnContext(ctx, "held order: redis unavailable", "err", err)
		return unavailable("order lookup temporarily unavailable")
	}
	if held {
		v, err := s.readStatus(ctx, rid, user)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, v)
	}
	if warmed {
		return notFound("you hold no order for this item")
	}
	dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	o, err := store.OrderOfBuyer(dctx, s.db, user, item)
	cancel()
	if errors.Is(err, store.ErrNotFound) {
		return notFound("you hold no order for this item")
	}
	if err != nil {
		s.log.WarnContext(ctx, "held order: mysql unavailable", "err", err)
		return unavailable("order lookup temporarily unavailable")
	}
	return c.JSON(http.StatusOK, orderstatus.FromOrder(o))
}

// heldBy reads the buyer mark of user in their home bucket of item: the
// item's bucket count first (bucket 0's meta), then the mark.
func (s *Server) heldBy(ctx context.Context, item, user int64) (rid string, held, warmed bool, err error) {
	n, warmed, err := s.st.Buckets(ctx, item)
	if err != nil || !warmed {
		return "", false, false, err
	}
	return s.st.HeldBy(ctx, item, stock.HomeBucket(user, n), user)
}
