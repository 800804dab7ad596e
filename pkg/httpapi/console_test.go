package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestConsoleServed: the ingress serves the console page to anyone (it
// holds no data), with its Content-Security-Policy and X-Request-Id, and
// only to GET, with no store up (nothing listens where Redis would be).
func TestConsoleServed(t *testing.T) {
	rdb := stock.NewClient([]string{"127.0.0.1:1"}, time.Second, 1)
	defer rdb.Close()
	srv, err := New(Config{Ingress: config.Ingress{JWT: jwtconfig.JWT{JWTSecret: "0123456789abcdef0123"}, PublishTimeout: time.Second,
		IdempotencyTTL: time.Hour, IPRateLimit: 100}, StoreTimeout: time.Second},
		Deps{Stock: stock.New(rdb), Registry: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, consolePath, nil))
	h := rec.Header()
	if rec.Code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(rec.Body.String(), "flashsale console") {
		t.Fatalf("GET %s: %d %q, %d bytes", consolePath, rec.Code, h.Get("Content-Type"), rec.Body.Len())
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || h.Get("X-Request-Id") == "" {
		t.Errorf("GET %s: CSP %q, X-Request-Id %q", consolePath, h.Get("Content-Security-Policy"), h.Get("X-Request-Id"))
	}
	rec = httptest.NewRecorder()
	srv.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, consolePath, nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d, want 405", consolePath, rec.Code)
	}
}
