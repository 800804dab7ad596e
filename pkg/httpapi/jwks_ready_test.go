package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// An ingress whose identity provider has not given it any key refuses every
// token, so it must not be ready: /readyz names the auth check.
func TestNotReadyWithoutJWKSKeys(t *testing.T) {
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(idp.Close)
	h := newHarness(t, harnessOpts{partitions: 1, ingress: func(in *config.Ingress) {
		in.JWTSecret = ""
		in.JWTJWKSURL, in.JWTJWKSAllowLoopbackHTTP = idp.URL, true
		in.JWTJWKSTimeout = 200 * time.Millisecond
	}})
	rec := httptest.NewRecorder()
	h.srv.Ops().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("readyz body %q: %v", rec.Body.Bytes(), err)
	}
	if rec.Code != http.StatusServiceUnavailable || body.Checks["auth"] == "ok" || body.Checks["auth"] == "" {
		t.Fatalf("readyz without keys: %d %s, want 503 naming auth", rec.Code, rec.Body.Bytes())
	}
	if body.Checks["redis"] != "ok" || body.Checks["mysql"] != "ok" {
		t.Fatalf("the stores are up: %s", rec.Body.Bytes())
	}
}
