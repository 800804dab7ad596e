package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// ingressSoldOut is the ingress's 410 body as it answers it (curl against
// the local pipeline, 2026-12-02: Echo's c.JSON of pkg/httpapi's apiError).
const ingressSoldOut = "{\"error\":\"sold_out\",\"message\":\"sold out\"}\n"

// TestHTTPFloorAnswersAsTheIngress: the HTTP floor answers a valid order
// with the ingress's 410 byte for byte, and refuses what the ingress
// refuses before it would ask Redis (a bad token, a body not sent as JSON).
func TestHTTPFloorAnswersAsTheIngress(t *testing.T) {
	in, err := ingressSettings()
	if err != nil {
		t.Fatal(err)
	}
	f, err := startHTTPFloor(testSecret, in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	tokens, err := MintTokens(testSecret, 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, auth, ctype, body string
		code                    int
	}{
		{"valid order", tokens.Buyers[0], "application/json", `{"item_id":7,"qty":1}`, http.StatusGone},
		{"charset", tokens.Buyers[0], "application/json; charset=utf-8", `{"item_id":7,"qty":1}`, http.StatusGone},
		{"bad token", "Bearer x.y.z", "application/json", `{"item_id":7,"qty":1}`, http.StatusUnauthorized},
		{"other secret", "Bearer " + strings.TrimPrefix(mustMint(t, "another-secret-0123456789abcdef"), "Bearer "), "application/json", `{"item_id":7,"qty":1}`, http.StatusUnauthorized},
		{"not json", tokens.Buyers[0], "text/plain", `{"item_id":7,"qty":1}`, http.StatusBadRequest},
		{"no item", tokens.Buyers[0], "application/json", `{"qty":1}`, http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, f.URL+"/api/v1/orders", strings.NewReader(c.body))
		req.Header.Set("Authorization", c.auth)
		req.Header.Set("Content-Type", c.ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s: %d %q, want %d", c.name, resp.StatusCode, b, c.code)
			continue
		}
		if c.code == http.StatusGone && (string(b) != ingressSoldOut || resp.Header.Get("Content-Type") != "application/json") {
			t.Errorf("%s: body %q (%s), want the ingress's %q (application/json)", c.name, b, resp.Header.Get("Content-Type"), ingressSoldOut)
		}
	}
}

func mustMint(t *testing.T, secret string) string {
	t.Helper()
	tk, err := MintTokens(secret, 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tk.Buyers[0]
}
