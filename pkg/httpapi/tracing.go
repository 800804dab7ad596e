package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// httpTraceContext reads the caller's W3C traceparent/tracestate: used
// directly, not through otel's global, as queue's message headers are.
var httpTraceContext propagation.TraceContext

// traceRequests makes each request a server span, the root of the order's
// trace on this side: a child of the caller's traceparent when one comes
// (a load balancer, a front end that traces), else a new trace. It is
// named by method and route template ("POST /api/v1/orders"), never by the
// raw path (ids in paths would make every span name unique), and carries
// the route, the status code and the X-Request-Id, never a header's value
// (no Authorization, no token) nor the query. A 5xx marks it failed.
//
// It runs after the router (e.Use), so the route is known, and before
// requestID and observe, so their log lines carry the span's ids. Off, it
// is one atomic load and no allocation.
func traceRequests(next echo.HandlerFunc) echo.HandlerFunc {
	if !tracing.Enabled() {
		// Echo wraps a request's handler in e.Use's middleware per
		// request: off, the next handler itself, not a closure over it
		// (which cost every request one allocation).
		return next
	}
	return func(c echo.Context) error {
		r := c.Request()
		route := c.Path()
		name := r.Method
		if route != "" {
			name += " " + route
		}
		ctx := httpTraceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracing.Tracer().Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		c.SetRequest(r.WithContext(ctx))
		err := next(c)
		if err != nil {
			c.Error(err) // observe has answered already; this is a handler run without it
		}
		if !span.IsRecording() {
			return nil // unsampled (99 in 100 at 1%): no attributes to build
		}
		status := c.Response().Status
		span.SetAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route),
			attribute.Int("http.response.status_code", status),
			attribute.String("flashsale.http_request_id", c.Response().Header().Get(echo.HeaderXRequestID)))
		if status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		return nil
	}
}
