package ctl

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestItemsStock: restock with a generated operation id (printed, and
// reusable to retry), withdraw with a given one, a retry that changes
// nothing, a reused id refused, and the item's stock after.
func TestItemsStock(t *testing.T) {
	g := startIngress(t)
	sid := strconv.FormatInt(testenv.ItemID(), 10)
	mustRun(t, g.lookup, "items", "create", sid, "--name", "socks", "--price-cents", "100", "--stock", "40",
		"--starts-at", "-1m", "--ends-at", "+1h")
	out := mustRun(t, g.lookup, "items", "stock", sid, "--delta", "+500")
	m := regexp.MustCompile(`operation_id:\s+(\S+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "applied:") || !strings.Contains(out, "+500") || !strings.Contains(out, "replayed:") {
		t.Fatalf("restock output:\n%s", out)
	}
	// The printed id retries the same change: nothing more is added.
	var ans StockResult
	if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "-o", "json", "items", "stock", sid, "--delta", "500", "--operation-id", m[1])), &ans); err != nil {
		t.Fatal(err)
	}
	if !ans.Replayed || ans.Applied != 500 {
		t.Fatalf("retry: %+v", ans)
	}
	if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "-o", "json", "items", "stock", sid, "--delta", "-600", "--operation-id", "damaged-1")), &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Replayed || ans.Applied != -540 {
		t.Fatalf("withdraw of more than is free: %+v, want applied -540", ans)
	}
	code, _, errs := run(t, g.lookup, "items", "stock", sid, "--delta", "-1", "--operation-id", "damaged-1")
	if code != ExitAPI || !strings.Contains(errs, "operation_conflict (HTTP 409)") {
		t.Fatalf("reused id: exit %d %q", code, errs)
	}
	if code, _, errs := run(t, g.lookup, "items", "stock", sid, "--delta", "0"); code != ExitUsage || !strings.Contains(errs, "--delta") {
		t.Fatalf("zero delta: exit %d %q", code, errs)
	}
	if code, _, _ := run(t, g.lookup, "items", "stock", sid); code != ExitUsage {
		t.Fatalf("no delta: exit %d", code)
	}
	var it Item
	if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "-o", "json", "items", "get", sid)), &it); err != nil {
		t.Fatal(err)
	}
	if it.TotalStock != 0 || it.RedisStock == nil || *it.RedisStock != 0 {
		t.Fatalf("after: %+v", it)
	}
}
