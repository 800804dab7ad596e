package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/stockchange"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// stockBody is the body of POST /api/v1/admin/items/{id}/stock (StockChange
// in ingress/openapi.yaml).
type stockBody struct {
	Delta       *int64  `json:"delta"`
	OperationID *string `json:"operation_id"`
}

// stockChangeKinds is the JSON type each field must have.
var stockChangeKinds = map[string]string{"delta": "integer", "operation_id": "string"}

// operationIDPattern: an operation id names Redis keys (the change's guards),
// so it is short and of a safe alphabet.
var operationIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// stockAnswer is the answer (StockChangeResult): what the operation did,
// the same on every call with its id.
type stockAnswer struct {
	OperationID string `json:"operation_id"`
	ItemID      int64  `json:"item_id"`
	Delta       int64  `json:"delta"`
	// Applied is the units the change made in both stores, signed: a
	// restock's delta; a withdraw's minus the units it took (0 to -delta:
	// only units nobody holds are taken).
	Applied int64 `json:"applied"`
	// Replayed: an earlier call with this operation id made the change.
	Replayed bool `json:"replayed"`
}

// changeStock is POST /api/v1/admin/items/{id}/stock: restock (delta > 0)
// or withdraw (delta < 0) while the item sells, once per operation_id
// (pkg/stockchange). A withdraw takes what is free now, at most -delta, and
// says how many in applied.
func (s *Server) changeStock(c echo.Context) error {
	id, b, err := adminBody[stockBody](c, stockChangeKinds, echo.MIMEApplicationJSON)
	if err != nil {
		return err
	}
	switch {
	case b.Delta == nil || *b.Delta == 0 || *b.Delta > store.MaxStock || *b.Delta < -store.MaxStock:
		return badRequest("invalid_delta", "delta must be a non-zero integer from -1000000000 to 1000000000 (positive: restock, negative: withdraw)")
	case b.OperationID == nil || !operationIDPattern.MatchString(*b.OperationID):
		return badRequest("invalid_operation_id", "operation_id must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'")
	}
	direction := "restock"
	if *b.Delta < 0 {
		direction = "withdraw"
	}
	ctx := c.Request().Context()
	res, err := s.changes.Change(ctx, id, *b.Delta, *b.OperationID)
	result, aerr := s.stockChangeError(c, err)
	if aerr == nil {
		result = "applied"
		if res.Replayed {
			result = "replayed"
		}
	}
	s.m.stockChanges.WithLabelValues(direction, result).Inc()
	if aerr != nil {
		return aerr
	}
	if res.Change.Applied != 0 {
		// Units came back or left: this replica's flags and item cache are
		// stale at once (forgetItem); the other replicas' sold-out flags end within
		// FLASHSALE_SOLDOUT_TTL (docs/design.md, "Changing a live sale's stock").
		s.admission.StockChanged(id)
		s.forgetItem(id)
	}
	s.log.InfoContext(ctx, "stock changed", "item_id", id, "operation_id", res.Change.OperationID,
		"delta", res.Change.Delta, "applied", res.Change.Applied, "replayed", res.Replayed)
	return c.JSON(http.StatusOK, stockAnswer{OperationID: res.Change.OperationID, ItemID: id, Delta: res.Change.Delta,
		Applied: res.Change.Applied, Replayed: res.Replayed})
}

// stockChangeError maps a Change error to its answer and metric result.
func (s *Server) stockChangeError(c echo.Context, err error) (string, *apiError) {
	switch {
	case err == nil:
		return "", nil
	case errors.Is(err, store.ErrNotFound):
		return "not_found", notFound("no such item")
	case errors.Is(err, stockchange.ErrConflict):
		return "conflict", newErr(http.StatusConflict, "operation_conflict",
			"this operation_id was used for another item or delta; nothing was changed: use a new operation_id for a new change")
	case errors.Is(err, store.ErrStockLimit):
		return "refused", newErr(http.StatusConflict, "stock_limit", fmt.Sprintf("the item's total stock would exceed %d; nothing was changed", store.MaxStock))
	case errors.Is(err, stockchange.ErrNotApplied):
		s.log.WarnContext(c.Request().Context(), "stock change recorded, not yet applied", "err", err)
		return "pending", &apiError{Status: http.StatusServiceUnavailable, Code: "not_applied", RetryAfter: time.Second,
			Message: "the change is recorded but not yet applied to Redis; repeat the call with the same operation_id (it is applied once), or the reaper finishes it on its next pass"}
	}
	s.log.WarnContext(c.Request().Context(), "admin: stock change: store unavailable", "err", err)
	return "unavailable", unavailable("a store is unavailable; nothing was changed")
}
