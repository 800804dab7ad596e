package tracing

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every flashsale span.
const ScopeName = "github.com/flashsale-dev/flashsale"

// current is the tracer spans are started with; nil while tracing is off.
var current atomic.Pointer[trace.Tracer]

// offSpan is the no-op span Start returns while tracing is off (a zero-size
// value: handing it out allocates nothing).
var offSpan = trace.SpanFromContext(context.Background())

// Use makes spans start on tp's tracer from now on; nil turns tracing off.
// Setup calls it; tests call it with an SDK provider over an in-memory
// exporter.
func Use(tp trace.TracerProvider) {
	if tp == nil {
		current.Store(nil)
		return
	}
	t := tp.Tracer(ScopeName)
	current.Store(&t)
}

// Enabled reports whether tracing is on. Code that would build attributes,
// links or carriers only for a span checks it first.
func Enabled() bool { return current.Load() != nil }

// Tracer is the tracer to start spans with options Start does not take
// (links, timestamps, new roots); a no-op tracer while tracing is off.
func Tracer() trace.Tracer {
	if t := current.Load(); t != nil {
		return *t
	}
	return noop.NewTracerProvider().Tracer(ScopeName)
}

// Start starts a span of kind named name, a child of ctx's span. While
// tracing is off it returns ctx itself and a no-op span, allocating nothing;
// callers set attributes only when span.IsRecording().
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	t := current.Load()
	if t == nil {
		return ctx, offSpan
	}
	return (*t).Start(ctx, name, trace.WithSpanKind(kind))
}

// Fail marks span failed with err (nil: nothing to mark).
func Fail(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
}
