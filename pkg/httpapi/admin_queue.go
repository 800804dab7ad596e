package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// getAdminQueue is GET /api/v1/admin/items/{id}/queue: an operator's view
// of one item's waiting room (waitroom.Room.AdminView).
func (s *Server) getAdminQueue(c echo.Context) error {
	it, err := s.queuedItem(c)
	if err != nil {
		return err
	}
	v, err := s.room.AdminView(c.Request().Context(), it)
	if err != nil {
		return unavailable("redis unavailable")
	}
	return c.JSON(http.StatusOK, v)
}
