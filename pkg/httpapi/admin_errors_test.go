package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The catalog's refusals of issue 22 (items 3 and 4) answer 409 with their
// own code and a message that says what to do; no server needed.
func TestCatalogRefusalsAnswer409(t *testing.T) {
	s := &Server{}
	open := &catalog.TransfersOpenError{ItemID: 7, Count: 1,
		Open: []store.Transfer{{ID: 12, ItemID: 7, From: 0, To: 1, Qty: 3, State: store.TransferPlanned, CreatedAt: time.Unix(0, 0)}}}
	for _, c := range []struct {
		err  error
		code string
		says string
	}{
		{fmt.Errorf("wrapped: %w", catalog.ErrSaleOpen), "sale_open", "close the window"},
		{fmt.Errorf("wrapped: %w", open), "in_flight", "transfer 12 (bucket 0 -> 1, qty 3, PLANNED"},
		{fmt.Errorf("wrapped: %w", store.ErrTransfersOpen), "in_flight", "stock is moving"},
	} {
		var ae *apiError
		if !errors.As(s.catalogError(nil, c.err), &ae) || ae.Status != http.StatusConflict || ae.Code != c.code || !strings.Contains(ae.Message, c.says) {
			t.Errorf("catalogError(%v) = %+v; want 409 %s saying %q", c.err, ae, c.code, c.says)
		}
	}
}
