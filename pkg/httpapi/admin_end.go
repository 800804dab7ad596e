package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/catalog"
)

// endItem is POST /api/v1/admin/items/{id}/end: the end-sale switch. It
// answers 200 once MySQL's ends_at is now and every bucket's window in
// Redis says so (catalog.End); from then on no replica admits a request of
// the item (Redis judges the window on every admission), and buyers are
// answered 409 sale_ended. Requests admitted before still get their 202
// once their publish returns (within FLASHSALE_PUBLISH_TIMEOUT). Ending an
// ended sale changes nothing and answers 200 again.
func (s *Server) endItem(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	it, err := s.catalog.End(c.Request().Context(), id)
	s.forgetItem(id)
	if errors.Is(err, catalog.ErrNotWarmed) {
		s.log.WarnContext(c.Request().Context(), "sale ended in MySQL but not in Redis", "item_id", id, "err", err)
		return &apiError{Status: http.StatusServiceUnavailable, Code: "not_warmed", RetryAfter: time.Second,
			Message: "the end is saved in MySQL, but Redis could not be told; admissions may go on: repeat the POST"}
	}
	if err != nil {
		return s.catalogError(c, err)
	}
	s.log.InfoContext(c.Request().Context(), "sale ended", "item_id", id, "ends_at", it.EndsAt)
	return c.JSON(http.StatusOK, toAdminItem(it))
}
