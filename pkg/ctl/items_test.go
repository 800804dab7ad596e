package ctl

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestItemsLifecycle: create, list, get, update and end an item through
// the CLI against a real ingress, in table and JSON output, then read its
// audit (ok: exit 0).
func TestItemsLifecycle(t *testing.T) {
	g := startIngress(t)
	id := testenv.ItemID()
	sid := strconv.FormatInt(id, 10)
	out := mustRun(t, g.lookup, "items", "create", sid, "--name", "socks", "--price-cents", "1299", "--stock", "40",
		"--per-user-limit", "2", "--starts-at", "-1m", "--ends-at", "+1h", "--buckets", "2")
	for _, want := range []string{"name:", "socks", "state:", "open", "stock:", "40 of 40 (MySQL)", "per_user_limit:", "buckets:"} {
		if !strings.Contains(out, want) {
			t.Errorf("create output lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, g.lookup, "items", "list")
	if !strings.Contains(out, "ID") || !strings.Contains(out, sid) || !strings.Contains(out, "40/40") || !strings.Contains(out, "12.99") {
		t.Errorf("list table:\n%s", out)
	}
	var page struct {
		Items []Item `json:"items"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "items", "list", "-o", "json")), &page); err != nil || len(page.Items) != 1 || page.Items[0].ID != id {
		t.Fatalf("list json: %+v %v", page, err)
	}
	var it Item
	if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "-o", "json", "items", "get", sid)), &it); err != nil {
		t.Fatal(err)
	}
	if it.PerUserLimit != 2 || it.Buckets != 2 || it.RedisStock == nil || *it.RedisStock != 40 || it.State != "open" {
		t.Errorf("get json: %+v", it)
	}
	// update sends only the flags given: the name changes, the limit stays.
	if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "items", "update", sid, "--name", "wool socks", "-o", "json")), &it); err != nil {
		t.Fatal(err)
	}
	if it.Name != "wool socks" || it.PerUserLimit != 2 || it.PriceCents != 1299 {
		t.Errorf("after update: %+v", it)
	}
	if code, _, errs := run(t, g.lookup, "items", "update", sid); code != ExitUsage || !strings.Contains(errs, "nothing to change") {
		t.Errorf("update without flags: exit %d %q", code, errs)
	}
	// The API's validation, its code and message, exit 1.
	code, _, errs := run(t, g.lookup, "items", "update", sid, "--per-user-limit", "0")
	if code != ExitAPI || !strings.Contains(errs, "invalid_per_user_limit (HTTP 400)") {
		t.Errorf("invalid update: exit %d %q", code, errs)
	}
	out = mustRun(t, g.lookup, "items", "end", sid)
	if !strings.Contains(out, "ended") {
		t.Errorf("end:\n%s", out)
	}
	out = mustRun(t, g.lookup, "audit", sid)
	if !strings.Contains(out, "audit:") || !strings.Contains(out, "ok") || !strings.Contains(out, "BUCKET") {
		t.Errorf("audit table:\n%s", out)
	}
	var rep struct {
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "audit", sid, "-o", "json")), &rep); err != nil || !rep.OK {
		t.Errorf("audit json: %+v %v", rep, err)
	}
	if code, _, errs := run(t, g.lookup, "items", "get", "999999999999999"); code != ExitAPI || !strings.Contains(errs, "not_found (HTTP 404)") {
		t.Errorf("get of an unknown item: exit %d %q", code, errs)
	}
}

// TestAuditNotOKExits3: an audit with a violation (MySQL's stock moved
// under Redis' feet) is exit code 3, in both outputs.
func TestAuditNotOKExits3(t *testing.T) {
	g := startIngress(t)
	sid := strconv.FormatInt(testenv.ItemID(), 10)
	mustRun(t, g.lookup, "items", "create", sid, "--name", "n", "--price-cents", "1", "--stock", "10", "--starts-at", "-1m", "--ends-at", "+1h")
	if _, err := g.db.Exec("UPDATE items SET stock = stock - 3 WHERE id = ?", sid); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"table", "json"} {
		code, out, errs := run(t, g.lookup, "audit", sid, "-o", o)
		if code != ExitAuditFailed || !strings.Contains(errs, "not ok") || out == "" {
			t.Errorf("-o %s: exit %d, stdout %q stderr %q; want 3 and the report", o, code, out, errs)
		}
	}
}

// TestErrorsAndTokens: no token is a usage error; a buyer's token is the
// API's 403; an unreachable server is exit 4; no message shows the whole
// token.
func TestErrorsAndTokens(t *testing.T) {
	g := startIngress(t)
	noTok := func(k string) (string, bool) {
		if k == "FLASHSALE_TOKEN" {
			return "", false
		}
		return g.lookup(k)
	}
	if code, _, errs := run(t, noTok, "items", "list"); code != ExitUsage || !strings.Contains(errs, "FLASHSALE_TOKEN") {
		t.Errorf("no token: exit %d %q", code, errs)
	}
	buyer := g.mint(t, 7, false)
	code, _, errs := run(t, g.lookup, "--token", buyer, "items", "list")
	if code != ExitAPI || !strings.Contains(errs, "forbidden (HTTP 403)") {
		t.Errorf("buyer token: exit %d %q", code, errs)
	}
	code, _, errs = run(t, g.lookup, "--server", "http://127.0.0.1:1", "--token", buyer, "items", "list")
	if code != ExitUnreachable || strings.Contains(errs, buyer) {
		t.Errorf("unreachable: exit %d %q", code, errs)
	}
	if got := redact("bad "+buyer, buyer); strings.Contains(got, buyer) || !strings.Contains(got, buyer[:8]) {
		t.Errorf("redact: %q", got)
	}
	if code, _, _ := run(t, g.lookup, "-o", "yaml", "items", "list"); code != ExitUsage {
		t.Errorf("-o yaml: exit %d, want 2", code)
	}
}

// TestItemsWithAQueue: create turns an item's waiting room on with its
// opening and rate, get shows them with the commitment, update changes the
// rate alone, and the API's refusal of a bad rate is exit 1.
func TestItemsWithAQueue(t *testing.T) {
	g := startIngress(t)
	sid := strconv.FormatInt(testenv.ItemID(), 10)
	out := mustRun(t, g.lookup, "items", "create", sid, "--name", "q", "--price-cents", "100", "--stock", "10",
		"--starts-at", "+1h", "--ends-at", "+2h", "--queue", "--queue-opens-at", "+10m", "--queue-rate", "250")
	for _, want := range []string{"queue:", "250 a second", "commitment:"} {
		if !strings.Contains(out, want) {
			t.Errorf("create output lacks %q:\n%s", want, out)
		}
	}
	var it Item
	if err := json.Unmarshal([]byte(mustRun(t, g.lookup, "items", "update", sid, "--queue-rate", "40", "-o", "json")), &it); err != nil {
		t.Fatal(err)
	}
	if !it.Queue || it.QueueRate != 40 || len(it.QueueCommitment) != 64 || it.QueueOpensAt == nil {
		t.Errorf("after a rate update: %+v", it)
	}
	if code, _, errs := run(t, g.lookup, "items", "update", sid, "--queue-rate", "0"); code != ExitAPI || !strings.Contains(errs, "invalid_queue_rate (HTTP 400)") {
		t.Errorf("rate 0: exit %d %q", code, errs)
	}
}
