package httpapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
)

// TestAudit: a consistent item passes; Redis drift and an order beyond the
// total are reported as the invariants they break.
func TestAudit(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	ctx := context.Background()
	item := testenv.ItemID()
	h.putItem(item, 2, 1)
	insertOrder(t, h, item, 40, "UNPAID", time.Hour)
	stockKey := fmt.Sprintf("fs:{item:%d}:stock", item)
	if err := h.rdb.DecrBy(ctx, stockKey, 1).Err(); err != nil { // as if admitted and settled
		t.Fatal(err)
	}
	rep, err := audit.Item(ctx, h.db, h.st, item)
	if err != nil || !rep.OK || rep.Unpaid != 1 || rep.RedisStock != 1 || rep.DBStock != 1 || rep.Total != 2 {
		t.Fatalf("consistent item: %+v %v", rep, err)
	}
	if err := h.rdb.Set(ctx, stockKey, 5, 0).Err(); err != nil {
		t.Fatal(err)
	}
	rep, err = audit.Item(ctx, h.db, h.st, item)
	if err != nil || rep.OK || len(rep.Violations) != 1 {
		t.Fatalf("redis drift not reported: %+v %v", rep, err)
	}
	t.Logf("violations: %v", rep.Violations)
	if r := h.do("GET", fmt.Sprintf("/api/v1/admin/items/%d/audit", testenv.ItemID()), "", h.admin()); r.Code != 404 {
		t.Fatalf("audit of unknown item: %d %s", r.Code, r.Body)
	}
}
