package httpapi

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestUnsupportedMethodIs405: a path that exists answers an undeclared
// method with 405 and Allow, with the IP limiter on or off; a path that does
// not exist is 404. Middleware on a group would turn the 405s into 404s.
func TestUnsupportedMethodIs405(t *testing.T) {
	for _, ipLimit := range []int{0, 100} {
		// Nothing listens there: no request in this test reaches a store.
		rdb := stock.NewClient([]string{"127.0.0.1:1"}, time.Second, 1)
		defer rdb.Close()
		srv, err := New(Config{Ingress: config.Ingress{JWT: jwtconfig.JWT{JWTSecret: "0123456789abcdef0123"}, PublishTimeout: time.Second,
			IdempotencyTTL: time.Hour, IPRateLimit: ipLimit}, StoreTimeout: time.Second},
			Deps{Stock: stock.New(rdb), Registry: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			method, path, allow string
			status              int
		}{
			{"DELETE", "/api/v1/orders", "OPTIONS, GET, POST", 405},
			{"TRACE", "/api/v1/orders", "OPTIONS, GET, POST", 405},
			{"PUT", "/api/v1/orders/1-0123456789abcdef0123456789ab", "OPTIONS, GET", 405},
			{"GET", "/api/v1/orders/1-0123456789abcdef0123456789ab/pay", "OPTIONS, POST", 405},
			{"DELETE", "/api/v1/admin/items/5", "OPTIONS, GET, PATCH, PUT", 405},
			{"DELETE", "/api/v1/admin/items", "OPTIONS, GET", 405},
			{"GET", "/api/v1/admin/items/5/end", "OPTIONS, POST", 405},
			{"GET", "/api/v1/admin/items/5/warm", "OPTIONS, POST", 405},
			{"POST", "/api/v1/items/5", "OPTIONS, GET", 405},
			{"POST", "/healthz", "OPTIONS, GET", 405},
			{"GET", "/api/v1/nothing", "", 404},
			{"GET", "/api/v1/admin/nothing", "", 404},
		} {
			rec := httptest.NewRecorder()
			srv.Echo().ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
			if rec.Code != c.status || rec.Header().Get("Allow") != c.allow {
				t.Errorf("ip limit %d: %s %s: %d Allow %q, want %d Allow %q", ipLimit, c.method, c.path,
					rec.Code, rec.Header().Get("Allow"), c.status, c.allow)
			}
		}
	}
}
