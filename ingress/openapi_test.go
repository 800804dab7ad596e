package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/httpapi"
)

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// TestOpenAPIMatchesRoutes fails when a route is served but not described,
// or described but not served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q, want 3.x", doc.OpenAPI)
	}
	described := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			described[strings.ToUpper(method)+" "+pathParam.ReplaceAllString(path, ":$1")] = true
		}
	}
	srv, err := httpapi.New(httpapi.Config{Ingress: config.Ingress{JWT: jwtconfig.JWT{JWTSecret: "0123456789abcdef0123"}, PublishTimeout: time.Second, IdempotencyTTL: time.Hour}, StoreTimeout: time.Second},
		httpapi.Deps{Registry: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OpenAPI: openAPI})
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, r := range srv.Echo().Routes() {
		if r.Method == "echo_route_not_found" {
			continue
		}
		served[r.Method+" "+r.Path] = true
	}
	var missing, extra []string
	for r := range served {
		if !described[r] {
			missing = append(missing, r)
		}
	}
	for r := range described {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("routes not in openapi.yaml: %v; described but not served: %v", missing, extra)
	}
	if len(served) < 10 { // /readyz and /metrics are on the ops listener
		t.Fatalf("only %d routes served", len(served))
	}
}

// TestOpenAPIServed: the embedded description is what /openapi.yaml returns.
func TestOpenAPIServed(t *testing.T) {
	srv, err := httpapi.New(httpapi.Config{Ingress: config.Ingress{JWT: jwtconfig.JWT{JWTSecret: "0123456789abcdef0123"}, PublishTimeout: time.Second, IdempotencyTTL: time.Hour}, StoreTimeout: time.Second},
		httpapi.Deps{Registry: prometheus.NewRegistry(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OpenAPI: openAPI})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil))
	if rec.Code != 200 || rec.Body.String() != string(openAPI) {
		t.Fatalf("GET /openapi.yaml: %d", rec.Code)
	}
}
