package orderlog

import (
	"context"
	"sync"
	"testing"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
)

// recorder is a MessageWriter that keeps the messages it was handed.
type recorder struct {
	mu   sync.Mutex
	msgs []kafka.Message
}

func (r *recorder) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msgs...)
	return nil
}

// A message published with a span in its context reaches Kafka carrying
// that span's traceparent, each message of a gathered batch its own
// caller's; one published without a span carries no header at all (tracing
// off leaves the message as it was), and a header the caller's message
// had (a DLQ replay carries the original's) is kept next to it.
func TestPublisherInjectsCallersTrace(t *testing.T) {
	rec := &recorder{}
	p := NewPublisher(rec, Batching{Size: 10})
	defer p.Close()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab, 1}, SpanID: trace.SpanID{0xcd, 2}, TraceFlags: trace.FlagsSampled})
	traced := kafka.Message{Key: []byte("7"), Value: []byte("a"), Headers: []kafka.Header{{Key: "kept", Value: []byte("v")}}}
	if err := p.WriteMessages(trace.ContextWithSpanContext(context.Background(), sc), traced); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMessages(context.Background(), msg("7", "b")); err != nil {
		t.Fatal(err)
	}
	if len(rec.msgs) != 2 {
		t.Fatalf("%d messages written, want 2", len(rec.msgs))
	}
	got := TraceOf(rec.msgs[0])
	if got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsSampled() {
		t.Fatalf("traced message carries %v (headers %v), want %v", got, rec.msgs[0].Headers, sc)
	}
	if (HeaderCarrier{&rec.msgs[0].Headers}).Get("kept") != "v" {
		t.Fatalf("the message's own header lost: %v", rec.msgs[0].Headers)
	}
	if len(rec.msgs[1].Headers) != 0 {
		t.Fatalf("untraced message carries headers %v", rec.msgs[1].Headers)
	}
	if len(traced.Headers) != 1 {
		t.Fatalf("the caller's message was changed: %v", traced.Headers)
	}
}
