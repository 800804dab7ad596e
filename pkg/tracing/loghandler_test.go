package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

func decodeLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(b)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// A line logged with a span's context carries that span's trace and span
// ids, also through With (the deployables' loggers are built With
// "service"); a line without one carries neither.
func TestLogHandlerAddsSpanIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("service", "test")
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, span := tp.Tracer("t").Start(context.Background(), "op")
	log.InfoContext(ctx, "in a span")
	span.End()
	log.Info("no span")

	lines := decodeLines(t, &buf)
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	sc := span.SpanContext()
	if lines[0]["trace_id"] != sc.TraceID().String() || lines[0]["span_id"] != sc.SpanID().String() {
		t.Fatalf("line %v, want trace_id %s span_id %s", lines[0], sc.TraceID(), sc.SpanID())
	}
	if lines[0]["service"] != "test" {
		t.Fatalf("With attrs lost: %v", lines[0])
	}
	if _, ok := lines[1]["trace_id"]; ok {
		t.Fatalf("trace_id on a line without a span: %v", lines[1])
	}
}

// An unsampled span still has ids: its lines share one trace_id across the
// deployables even when no span was exported.
func TestLogHandlerUnsampledSpan(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil)))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
	ctx, span := tp.Tracer("t").Start(context.Background(), "op")
	defer span.End()
	log.WarnContext(ctx, "unsampled")
	lines := decodeLines(t, &buf)
	if len(lines) != 1 || lines[0]["trace_id"] != span.SpanContext().TraceID().String() {
		t.Fatalf("lines %v, want trace_id %s", lines, span.SpanContext().TraceID())
	}
}
