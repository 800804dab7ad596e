package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestBodyMustBeDeclaredJSON: a valid JSON body sent as text/plain, as a
// form, or with no Content-Type at all is 415 unsupported_media_type and
// reserves nothing; application/json with parameters, in any case, is
// accepted.
func TestBodyMustBeDeclaredJSON(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	item := h.newItem(50, 1)
	send := func(method, path, body, ctype string, hdr map[string]string) resp {
		req := httptest.NewRequest(method, path, bytes.NewBufferString(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.srv.Echo().ServeHTTP(rec, req)
		return resp{Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	}
	order := fmt.Sprintf(`{"item_id":%d,"qty":1}`, item)
	itemBody := fmt.Sprintf(`{"name":"x","price_cents":1,"stock":7,"per_user_limit":1,"starts_at":%q,"ends_at":%q}`,
		time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	user := int64(100)
	for _, ctype := range []string{"text/plain", "", "application/x-www-form-urlencoded", "text/json", "application/jsonx", "application/json; charset", "multipart/form-data; boundary=x"} {
		user++
		r := send(http.MethodPost, "/api/v1/orders", order, ctype, h.as(user))
		if r.Code != http.StatusUnsupportedMediaType || r.json(t)["error"] != "unsupported_media_type" || r.json(t)["message"] == nil {
			t.Errorf("order as %q: %d %s, want 415 unsupported_media_type", ctype, r.Code, r.Body)
		}
		r = send(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", item), itemBody, ctype, h.admin())
		if r.Code != http.StatusUnsupportedMediaType || r.json(t)["error"] != "unsupported_media_type" {
			t.Errorf("admin put as %q: %d %s, want 415 unsupported_media_type", ctype, r.Code, r.Body)
		}
	}
	if s := h.redisStock(item); s != 50 {
		t.Fatalf("redis stock %d after refused media types, want 50 (nothing reserved, item not changed)", s)
	}
	if msgs := h.readTopic(); len(msgs) != 0 {
		t.Fatalf("%d messages in Kafka after refused media types, want 0", len(msgs))
	}
	// Declared JSON is taken whatever the case and parameters.
	for _, ctype := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;Charset=UTF-8"} {
		user++
		if r := send(http.MethodPost, "/api/v1/orders", order, ctype, h.as(user)); r.Code != http.StatusAccepted {
			t.Errorf("order as %q: %d %s, want 202", ctype, r.Code, r.Body)
		}
	}
	// Bodiless POSTs need no Content-Type; an empty body is still a 400.
	if r := send(http.MethodPost, fmt.Sprintf("/api/v1/admin/items/%d/warm", item), "", "", h.admin()); r.Code == http.StatusUnsupportedMediaType {
		t.Errorf("bodiless warm: %d %s", r.Code, r.Body)
	}
	if r := send(http.MethodPost, "/api/v1/orders", "", "", h.as(user+1)); r.Code != http.StatusBadRequest {
		t.Errorf("empty order body: %d %s, want 400", r.Code, r.Body)
	}
}
