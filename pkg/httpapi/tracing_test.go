package httpapi

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// recordSpans turns tracing on for the test with an in-memory recorder.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracing.Use(tp)
	t.Cleanup(func() { tracing.Use(nil); _ = tp.Shutdown(t.Context()) })
	return rec
}

// A request is one server span named by its route template, a child of
// the caller's traceparent, with the status code; its handler's context
// holds that span; no header value (the bearer token) is an attribute.
func TestTraceRequests(t *testing.T) {
	rec := recordSpans(t)
	e := echo.New()
	e.Use(traceRequests)
	var inHandler trace.SpanContext
	e.GET("/api/v1/items/:id", func(c echo.Context) error {
		inHandler = trace.SpanContextFromContext(c.Request().Context())
		c.Response().Header().Set(echo.HeaderXRequestID, "rid-1")
		return c.String(http.StatusServiceUnavailable, "down")
	})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/items/42?token=secret-query", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req.Header.Set("Authorization", "Bearer secret-token")
	e.ServeHTTP(httptest.NewRecorder(), req)

	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != "GET /api/v1/items/:id" || s.SpanKind() != trace.SpanKindServer {
		t.Fatalf("span %q kind %v", s.Name(), s.SpanKind())
	}
	if s.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("parent %v, want the caller's traceparent", s.Parent())
	}
	if inHandler.SpanID() != s.SpanContext().SpanID() {
		t.Fatalf("handler's span %v, want the request's %v", inHandler.SpanID(), s.SpanContext().SpanID())
	}
	attrs := map[string]string{}
	for _, a := range s.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
		if strings.Contains(a.Value.Emit(), "secret") {
			t.Errorf("attribute %s carries a secret: %s", a.Key, a.Value.Emit())
		}
	}
	if attrs["http.response.status_code"] != "503" || attrs["http.route"] != "/api/v1/items/:id" || attrs["flashsale.http_request_id"] != "rid-1" {
		t.Fatalf("attributes %v", attrs)
	}
	if s.Status().Code.String() != "Error" {
		t.Fatalf("a 503 span has status %v", s.Status())
	}
}

// Without a traceparent the request starts a new trace.
func TestTraceRequestsNewRoot(t *testing.T) {
	rec := recordSpans(t)
	e := echo.New()
	e.Use(traceRequests)
	e.POST("/api/v1/orders", func(c echo.Context) error { return c.NoContent(http.StatusAccepted) })
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/v1/orders", nil))
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Parent().IsValid() || spans[0].Name() != "POST /api/v1/orders" {
		t.Fatalf("spans %v", spans)
	}
}

// Off, the middleware costs a request no allocation: the same request
// through routes with and without it allocates the same. AllocsPerRun
// counts the whole process's allocations, so goroutines other tests of the
// package left winding down (a flush, a watcher) can add one to a run: the
// least of five runs is the request's own count (the noise only adds).
func TestTraceRequestsOffAllocatesNothing(t *testing.T) {
	tracing.Use(nil)
	serve := func(mw ...echo.MiddlewareFunc) float64 {
		e := echo.New()
		e.Use(mw...)
		e.POST("/api/v1/orders", func(c echo.Context) error { return c.NoContent(http.StatusAccepted) })
		req := httptest.NewRequest(http.MethodPost, "/api/v1/orders", nil)
		req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		w := httptest.NewRecorder()
		least := math.Inf(1)
		for range 5 {
			least = min(least, testing.AllocsPerRun(200, func() { e.ServeHTTP(w, req) }))
		}
		return least
	}
	without, with := serve(), serve(traceRequests)
	if with != without {
		t.Fatalf("%v allocations per request with the middleware off, %v without it", with, without)
	}
}
