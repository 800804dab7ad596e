package httpapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// TestAudit: a consistent item passes; Redis drift and an order beyond the
// total are reported as the invariants they break (I3 redis conservation,
// I1 oversell), by the function and through the admin endpoint.
func TestAudit(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	ctx := context.Background()
	item := h.newItem(2, 1)
	insertOrder(t, h, item, 40, "UNPAID", time.Hour)
	stockKey := fmt.Sprintf("fs:{item:%d}:stock", item)
	if err := h.rdb.DecrBy(ctx, stockKey, 1).Err(); err != nil { // as if admitted and settled
		t.Fatal(err)
	}
	rep, err := audit.Item(ctx, h.db, h.st, item)
	if err != nil || !rep.OK || rep.Unpaid != 1 || rep.RedisStock != 1 || rep.DBStock != 1 || rep.Total != 2 {
		t.Fatalf("consistent item: %+v %v", rep, err)
	}

	// Redis drift: 4 units Redis may sell that nobody holds.
	if err := h.rdb.Set(ctx, stockKey, 5, 0).Err(); err != nil {
		t.Fatal(err)
	}
	rep, err = audit.Item(ctx, h.db, h.st, item)
	if err != nil || rep.OK || len(rep.Violations) != 1 || !strings.HasPrefix(rep.Violations[0], "I3 redis conservation") {
		t.Fatalf("redis drift not reported as I3 redis conservation alone: %+v %v", rep, err)
	}
	if err := h.rdb.Set(ctx, stockKey, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}

	// Oversell: two more active orders than the total of 2, written past
	// every guard (MySQL's stock CAS would have refused them).
	for _, user := range []int64{41, 42} {
		rid := reqid.New(item, time.Now())
		if _, err := h.db.ExecContext(ctx, "INSERT INTO request_outcomes (request_id, item_id, user_id, qty, outcome) VALUES (?, ?, ?, 1, 'ORDERED')", rid, item, user); err != nil {
			t.Fatal(err)
		}
		if _, err := h.db.ExecContext(ctx, "INSERT INTO orders (request_id, user_id, item_id, qty, price_cents, status, expires_at, paid_at) VALUES (?, ?, ?, 1, 999, 'PAID', NOW(3) + INTERVAL 1 HOUR, NOW(3))", rid, user, item); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = audit.Item(ctx, h.db, h.st, item)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Unpaid+rep.Paid != 3 || !hasViolation(rep.Violations, "I1 oversell") {
		t.Fatalf("3 active orders of a total of 2 not reported as I1 oversell: %+v", rep)
	}
	r := h.do("GET", fmt.Sprintf("/api/v1/admin/items/%d/audit", item), "", h.admin())
	if r.Code != 200 {
		t.Fatalf("audit endpoint: %d %s", r.Code, r.Body)
	}
	m := r.json(t)
	vs, _ := m["violations"].([]any)
	var got []string
	for _, v := range vs {
		s, _ := v.(string)
		got = append(got, s)
	}
	if m["ok"] != false || !hasViolation(got, "I1 oversell") {
		t.Fatalf("audit endpoint does not report the oversell: %s", r.Body)
	}

	if r := h.do("GET", fmt.Sprintf("/api/v1/admin/items/%d/audit", testenv.ItemID()), "", h.admin()); r.Code != 404 {
		t.Fatalf("audit of unknown item: %d %s", r.Code, r.Body)
	}
}

func hasViolation(vs []string, prefix string) bool {
	for _, v := range vs {
		if strings.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}
