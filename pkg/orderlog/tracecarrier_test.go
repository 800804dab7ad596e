package orderlog_test

import (
	"context"
	"testing"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

func spanContext(t *testing.T, tid, sid string, state string) trace.SpanContext {
	t.Helper()
	traceID, err := trace.TraceIDFromHex(tid)
	if err != nil {
		t.Fatal(err)
	}
	spanID, err := trace.SpanIDFromHex(sid)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := trace.ParseTraceState(state)
	if err != nil {
		t.Fatal(err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
}

// The order's trace context survives a Kafka message: written by the
// ingress as W3C headers next to the ones a message already has, read back
// by the consumer as the same trace and span, tracestate included.
func TestTraceContextRoundTripsThroughHeaders(t *testing.T) {
	sc := spanContext(t, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "vendor=v1")
	m := kafka.Message{Key: []byte("7"), Headers: []kafka.Header{{Key: "other", Value: []byte("kept")}}}
	orderlog.InjectTrace(trace.ContextWithSpanContext(context.Background(), sc), &m)

	c := orderlog.HeaderCarrier{Headers: &m.Headers}
	if got := c.Get("traceparent"); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("traceparent = %q", got)
	}
	if got := c.Get("tracestate"); got != "vendor=v1" {
		t.Fatalf("tracestate = %q", got)
	}
	if got := c.Get("other"); got != "kept" {
		t.Fatalf("a header the message had = %q, want kept", got)
	}
	got := orderlog.TraceOf(m)
	if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsSampled() || got.TraceState().Get("vendor") != "v1" {
		t.Fatalf("extracted %v, want %v", got, sc)
	}
}

// A message injected twice (carried on and traced again) has one
// traceparent, the new one: readers take the first header of a key, so an
// added second one would leave the consumer continuing the old trace.
func TestInjectReplacesTraceparent(t *testing.T) {
	old := spanContext(t, "11111111111111111111111111111111", "2222222222222222", "")
	cur := spanContext(t, "33333333333333333333333333333333", "4444444444444444", "")
	var m kafka.Message
	orderlog.InjectTrace(trace.ContextWithSpanContext(context.Background(), old), &m)
	orderlog.InjectTrace(trace.ContextWithSpanContext(context.Background(), cur), &m)
	n := 0
	for _, h := range m.Headers {
		if h.Key == "traceparent" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d traceparent headers, want 1: %v", n, m.Headers)
	}
	if got := orderlog.TraceOf(m); got.TraceID() != cur.TraceID() {
		t.Fatalf("consumer would continue trace %s, want %s", got.TraceID(), cur.TraceID())
	}
}

// Tracing off (no span in the context): the message gets no header at all,
// and a message without one yields no span context.
func TestNoSpanNoHeaders(t *testing.T) {
	var m kafka.Message
	orderlog.InjectTrace(context.Background(), &m)
	if len(m.Headers) != 0 {
		t.Fatalf("headers %v on an untraced message", m.Headers)
	}
	if orderlog.TraceOf(m).IsValid() {
		t.Fatal("span context from no headers")
	}
	if keys := (orderlog.HeaderCarrier{Headers: &m.Headers}).Keys(); len(keys) != 0 {
		t.Fatalf("keys %v", keys)
	}
}
