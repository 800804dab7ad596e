package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// TestBadInputs: each bad request is a 4xx with a JSON error and leaves the
// stock alone.
func TestBadInputs(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := h.newItem(50, 2)
	user := h.as(3)
	sign := func(c jwt.MapClaims, key []byte) map[string]string {
		// Well-formed but for the one flaw each case names.
		for k, v := range map[string]any{"aud": auth.DefaultAudience, "iat": time.Now().Add(-2 * time.Hour).Unix()} {
			if _, set := c[k]; !set {
				c[k] = v
			}
		}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"Authorization": "Bearer " + tok}
	}
	exp := time.Now().Add(time.Hour).Unix()
	noneTok, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "3", "exp": exp}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	body := func(s string) string { return s }
	ok := fmt.Sprintf(`{"item_id":%d,"qty":1}`, item)
	cases := []struct {
		name   string
		method string
		path   string
		body   string
		hdr    map[string]string
		status int
	}{
		{"malformed json", "POST", "/api/v1/orders", `{"item_id":`, user, 400},
		{"not an object", "POST", "/api/v1/orders", `[1,2]`, user, 400},
		{"empty body", "POST", "/api/v1/orders", ``, user, 400},
		{"trailing data", "POST", "/api/v1/orders", ok + `{}`, user, 400},
		{"item_id string", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":"%d","qty":1}`, item), user, 400},
		{"qty string", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":"1"}`, item), user, 400},
		{"qty float", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":1.5}`, item), user, 400},
		{"qty zero", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":0}`, item), user, 400},
		{"qty negative", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":-1}`, item), user, 400},
		{"qty over limit", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":3}`, item), user, 400},
		{"qty huge", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":99999999999999999999}`, item), user, 400},
		{"qty missing", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d}`, item), user, 400},
		{"item_id missing", "POST", "/api/v1/orders", `{"qty":1}`, user, 400},
		{"item_id negative", "POST", "/api/v1/orders", `{"item_id":-5,"qty":1}`, user, 400},
		{"item_id overflow", "POST", "/api/v1/orders", `{"item_id":9223372036854775808,"qty":1}`, user, 400},
		{"unknown field", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":1,"price":0}`, item), user, 400},
		{"null qty", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":null}`, item), user, 400},
		{"oversized body", "POST", "/api/v1/orders", `{"item_id":1,"qty":1,"x":"` + strings.Repeat("a", 5000) + `"}`, user, 400},
		{"bad idempotency key", "POST", "/api/v1/orders", ok, map[string]string{"Authorization": user["Authorization"], "Idempotency-Key": "has space"}, 400},
		{"unknown item", "POST", "/api/v1/orders", `{"item_id":1,"qty":1}`, user, 404},
		{"no token", "POST", "/api/v1/orders", ok, nil, 401},
		{"basic auth", "POST", "/api/v1/orders", ok, map[string]string{"Authorization": "Basic dTpw"}, 401},
		{"alg none", "POST", "/api/v1/orders", ok, map[string]string{"Authorization": "Bearer " + noneTok}, 401},
		{"wrong secret", "POST", "/api/v1/orders", ok, sign(jwt.MapClaims{"sub": "3", "exp": exp}, []byte("wrong-secret-0123456789")), 401},
		{"expired token", "POST", "/api/v1/orders", ok, sign(jwt.MapClaims{"sub": "3", "exp": time.Now().Add(-time.Hour).Unix()}, []byte(testSecret)), 401},
		{"token without exp", "POST", "/api/v1/orders", ok, sign(jwt.MapClaims{"sub": "3"}, []byte(testSecret)), 401},
		{"non-numeric sub", "POST", "/api/v1/orders", ok, sign(jwt.MapClaims{"sub": "alice", "exp": exp}, []byte(testSecret)), 401},
		{"overflowing sub", "POST", "/api/v1/orders", ok, sign(jwt.MapClaims{"sub": "99999999999999999999", "exp": exp}, []byte(testSecret)), 401},
		{"wrong audience", "POST", "/api/v1/orders", ok, sign(jwt.MapClaims{"sub": "3", "exp": exp, "aud": "another-service"}, []byte(testSecret)), 401},
		{"lifetime over the cap", "POST", "/api/v1/orders", ok, sign(jwt.MapClaims{"sub": "3", "exp": time.Now().Add(30 * 24 * time.Hour).Unix()}, []byte(testSecret)), 401},
		{"well-formed token", "POST", "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":0}`, item), sign(jwt.MapClaims{"sub": "3", "exp": exp}, []byte(testSecret)), 400},
		{"item id text", "GET", "/api/v1/items/abc", "", nil, 400},
		{"item id overflow", "GET", "/api/v1/items/9223372036854775808", "", nil, 400},
		{"item id zero", "GET", "/api/v1/items/0", "", nil, 400},
		{"item id leading zero", "GET", "/api/v1/items/0" + fmt.Sprint(item), "", nil, 400},
		{"unknown item view", "GET", "/api/v1/items/1", "", nil, 404},
		{"malformed request id", "GET", "/api/v1/orders/not-an-id", "", user, 404},
		{"unknown request id", "GET", "/api/v1/orders/" + reqid.New(item, time.Now()), "", user, 404},
		{"admin bad stock", "PUT", fmt.Sprintf("/api/v1/admin/items/%d", item), body(`{"name":"x","price_cents":1,"stock":-1,"per_user_limit":1,"starts_at":"2026-01-01T00:00:00Z","ends_at":"2027-01-01T00:00:00Z"}`), h.admin(), 400},
		{"admin bad window", "PUT", fmt.Sprintf("/api/v1/admin/items/%d", item), body(`{"name":"x","price_cents":1,"stock":5,"per_user_limit":1,"starts_at":"2027-01-01T00:00:00Z","ends_at":"2026-01-01T00:00:00Z"}`), h.admin(), 400},
		{"admin bad time", "PUT", fmt.Sprintf("/api/v1/admin/items/%d", item), body(`{"name":"x","price_cents":1,"stock":5,"per_user_limit":1,"starts_at":"yesterday","ends_at":"2026-01-01T00:00:00Z"}`), h.admin(), 400},
		{"admin missing field", "PUT", fmt.Sprintf("/api/v1/admin/items/%d", item), body(`{"name":"x"}`), h.admin(), 400},
		{"wrong method", "DELETE", "/api/v1/orders", "", user, 405},
		{"no route", "GET", "/api/v1/nothing", "", nil, 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(c.method, c.path, c.body, c.hdr)
			if r.Code != c.status {
				t.Fatalf("status %d, want %d: %s", r.Code, c.status, r.Body)
			}
			m := r.json(t)
			if code, _ := m["error"].(string); code == "" || m["message"] == nil {
				t.Fatalf("no JSON error: %s", r.Body)
			}
		})
	}
	if s := h.redisStock(item); s != 50 {
		t.Fatalf("stock %d after bad inputs, want 50", s)
	}
	var n int
	if err := h.db.QueryRow("SELECT total_stock FROM items WHERE id = ?", item).Scan(&n); err != nil || n != 50 {
		t.Fatalf("mysql total stock %d (%v)", n, err)
	}
}

// TestAuthorization: another user's request is 404 for status and pay;
// non-admins get 403 on admin routes, and an admin reads the audit.
func TestAuthorization(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := h.newItem(5, 1)
	r := h.order(10, item, 1, "")
	if r.Code != http.StatusAccepted {
		t.Fatalf("order: %d %s", r.Code, r.Body)
	}
	rid := r.json(t)["request_id"].(string)
	if r := h.do("GET", "/api/v1/orders/"+rid, "", h.as(10)); r.Code != 200 || r.json(t)["status"] != "PENDING" {
		t.Fatalf("owner status: %d %s", r.Code, r.Body)
	}
	if r := h.do("GET", "/api/v1/orders/"+rid, "", h.as(11)); r.Code != 404 {
		t.Fatalf("other user's status: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/orders/"+rid+"/pay", "", h.as(11)); r.Code != 404 {
		t.Fatalf("other user's pay: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/orders/"+rid+"/pay", "", h.as(10)); r.Code != 409 || r.json(t)["error"] != "not_payable" {
		t.Fatalf("pay while pending: %d %s", r.Code, r.Body)
	}
	for _, rt := range []struct{ method, path string }{
		{"PUT", fmt.Sprintf("/api/v1/admin/items/%d", item)},
		{"POST", fmt.Sprintf("/api/v1/admin/items/%d/warm", item)},
		{"GET", fmt.Sprintf("/api/v1/admin/items/%d/audit", item)},
	} {
		if r := h.do(rt.method, rt.path, `{}`, h.as(10)); r.Code != 403 || r.json(t)["error"] != "forbidden" {
			t.Errorf("%s %s as buyer: %d %s", rt.method, rt.path, r.Code, r.Body)
		}
		if r := h.do(rt.method, rt.path, `{}`, nil); r.Code != 401 {
			t.Errorf("%s %s anonymous: %d %s", rt.method, rt.path, r.Code, r.Body)
		}
	}
	if r := h.do("GET", fmt.Sprintf("/api/v1/items/%d", item), "", nil); r.Code != 200 || r.json(t)["stock_left"] != float64(4) {
		t.Fatalf("public item view: %d %s", r.Code, r.Body)
	}
	// No consumer runs here, so the reservation stays pending: MySQL has not
	// seen it (stock 5, no order) and Redis counts it (stock 4 + pending 1),
	// which is a consistent item.
	if r := h.do("GET", fmt.Sprintf("/api/v1/admin/items/%d/audit", item), "", h.admin()); r.Code != 200 {
		t.Fatalf("audit: %d %s", r.Code, r.Body)
	} else if m := r.json(t); m["pending"] != float64(1) || m["pending_qty"] != float64(1) || m["redis_stock"] != float64(4) ||
		m["db_stock"] != float64(5) || m["total"] != float64(5) || m["ok"] != true || len(m["violations"].([]any)) != 0 {
		t.Fatalf("audit while pending: %s", r.Body)
	}
}

// insertOrder writes an ORDERED decision and its order directly, as the
// consumer would, with the given deadline offset from the DB clock.
func insertOrder(t *testing.T, h *harness, item, user int64, status string, expiresIn time.Duration) string {
	t.Helper()
	rid := reqid.New(item, time.Now())
	ctx := context.Background()
	if _, err := h.db.ExecContext(ctx, "INSERT INTO request_outcomes (request_id, item_id, user_id, qty, outcome) VALUES (?, ?, ?, 1, 'ORDERED')", rid, item, user); err != nil {
		t.Fatal(err)
	}
	_, err := h.db.ExecContext(ctx, "INSERT INTO orders (request_id, user_id, item_id, qty, price_cents, status, expires_at) VALUES (?, ?, ?, 1, 999, ?, NOW(3) + INTERVAL ? MICROSECOND)",
		rid, user, item, status, expiresIn.Microseconds())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.ExecContext(ctx, "UPDATE items SET stock = stock - 1 WHERE id = ?", item); err != nil {
		t.Fatal(err)
	}
	return rid
}

// TestPay: the CAS pays an UNPAID order in time, idempotently; refuses an
// expired one (by the database clock, reaper or not), a cancelled one, and
// anyone but the owner.
func TestPay(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := h.newItem(10, 1)
	good := insertOrder(t, h, item, 20, "UNPAID", time.Hour)
	expired := insertOrder(t, h, item, 21, "UNPAID", -time.Second)
	cancelled := insertOrder(t, h, item, 22, "CANCELLED", time.Hour)

	if r := h.do("GET", "/api/v1/orders/"+good, "", h.as(20)); r.Code != 200 || r.json(t)["status"] != "UNPAID" {
		t.Fatalf("status before pay: %d %s", r.Code, r.Body)
	}
	for range 2 {
		if r := h.do("POST", "/api/v1/orders/"+good+"/pay", "", h.as(20)); r.Code != 200 || r.json(t)["status"] != "PAID" {
			t.Fatalf("pay: %d %s", r.Code, r.Body)
		}
	}
	if r := h.do("GET", "/api/v1/orders/"+good, "", h.as(20)); r.Code != 200 || r.json(t)["status"] != "PAID" {
		t.Fatalf("status after pay (cache must have moved on): %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/orders/"+good+"/pay", "", h.as(21)); r.Code != 404 {
		t.Fatalf("pay by another user: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/orders/"+expired+"/pay", "", h.as(21)); r.Code != 409 || r.json(t)["error"] != "not_payable" {
		t.Fatalf("pay after expires_at: %d %s", r.Code, r.Body)
	}
	var st string
	if err := h.db.QueryRow("SELECT status FROM orders WHERE request_id = ?", expired).Scan(&st); err != nil || st != "UNPAID" {
		t.Fatalf("expired order status %q (%v)", st, err)
	}
	if r := h.do("POST", "/api/v1/orders/"+cancelled+"/pay", "", h.as(22)); r.Code != 409 {
		t.Fatalf("pay of cancelled: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/orders/"+reqid.New(item, time.Now())+"/pay", "", h.as(22)); r.Code != 404 {
		t.Fatalf("pay of unknown: %d %s", r.Code, r.Body)
	}
}

// TestWarm: warm refuses while a reservation is pending or the order writers
// lag, a stock change after orders is has_orders, and a quiet item rebuilds.
func TestWarm(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	quiet := testenv.ItemID()
	h.putItem(quiet, 7, 1)
	path := func(id int64) string { return fmt.Sprintf("/api/v1/admin/items/%d/warm", id) }
	if err := h.rdb.Set(context.Background(), fmt.Sprintf("fs:{item:%d}:stock", quiet), 3, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r := h.do("POST", path(quiet), "", h.admin()); r.Code != 200 {
		t.Fatalf("warm of quiet item: %d %s", r.Code, r.Body)
	}
	if s := h.redisStock(quiet); s != 7 {
		t.Fatalf("warm did not rebuild stock from MySQL: %d", s)
	}
	if r := h.do("POST", path(testenv.ItemID()), "", h.admin()); r.Code != 404 {
		t.Fatalf("warm of unknown item: %d %s", r.Code, r.Body)
	}

	busy := testenv.ItemID()
	h.putItem(busy, 5, 1)
	if r := h.order(30, busy, 1, ""); r.Code != 202 {
		t.Fatalf("order: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", path(busy), "", h.admin()); r.Code != 409 || r.json(t)["error"] != "in_flight" {
		t.Fatalf("warm while pending: %d %s", r.Code, r.Body)
	}
	if s := h.redisStock(busy); s != 4 {
		t.Fatalf("refused warm changed stock: %d", s)
	}
	// Redis lost the item: the pending reservation is gone with it, but the
	// message is still unconsumed in Kafka, so warm must still refuse.
	if err := h.rdb.Del(context.Background(), fmt.Sprintf("fs:{item:%d}:stock", busy), fmt.Sprintf("fs:{item:%d}:resv", busy)).Err(); err != nil {
		t.Fatal(err)
	}
	if r := h.do("POST", path(busy), "", h.admin()); r.Code != 409 {
		t.Fatalf("warm with unconsumed messages: %d %s", r.Code, r.Body)
	}

	sold := testenv.ItemID()
	h.putItem(sold, 5, 1)
	insertOrder(t, h, sold, 31, "UNPAID", time.Hour)
	body := fmt.Sprintf(`{"name":"n","price_cents":1,"stock":9,"per_user_limit":1,"starts_at":%q,"ends_at":%q}`,
		time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	if r := h.do("PUT", fmt.Sprintf("/api/v1/admin/items/%d", sold), body, h.admin()); r.Code != 409 || r.json(t)["error"] != "has_orders" {
		t.Fatalf("stock change after orders: %d %s", r.Code, r.Body)
	}
}
