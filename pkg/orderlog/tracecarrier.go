package orderlog

import (
	"context"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HeaderCarrier is a propagation.TextMapCarrier over a Kafka message's
// headers: the ingress writes the order's W3C trace context (traceparent,
// tracestate) into its message, and the consumer reads it back, so the
// order's row write joins the trace of the POST that admitted it.
//
// Set replaces a header of the same key rather than adding a second: a
// message carried on (the DLQ copies headers) and injected again must not
// carry two traceparents, of which readers take the first.
type HeaderCarrier struct{ Headers *[]kafka.Header }

var _ propagation.TextMapCarrier = HeaderCarrier{}

// Get returns the value of the first header named key, or "".
func (c HeaderCarrier) Get(key string) string {
	for _, h := range *c.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Set sets header key to value, replacing any header of that key.
func (c HeaderCarrier) Set(key, value string) {
	hs := *c.Headers
	for i, h := range hs {
		if h.Key == key {
			// A new slice: the old one may be shared with a message it
			// was copied from.
			out := make([]kafka.Header, 0, len(hs))
			out = append(append(out, hs[:i]...), hs[i+1:]...)
			for j := len(out) - 1; j >= i; j-- { // further copies of key
				if out[j].Key == key {
					out = append(out[:j], out[j+1:]...)
				}
			}
			hs = out
			break
		}
	}
	*c.Headers = append(hs, kafka.Header{Key: key, Value: []byte(value)})
}

// Keys lists the headers' keys.
func (c HeaderCarrier) Keys() []string {
	ks := make([]string, len(*c.Headers))
	for i, h := range *c.Headers {
		ks[i] = h.Key
	}
	return ks
}

// traceContext is the W3C propagator: traceparent and tracestate only. It
// is used directly, not through otel's global, so the message format does
// not depend on what some library set globally.
var traceContext propagation.TraceContext

// InjectTrace writes the trace context of ctx's span into m's headers; with
// no valid span (tracing off) it writes nothing, so an untraced message is
// byte for byte what it was before tracing existed.
func InjectTrace(ctx context.Context, m *kafka.Message) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	traceContext.Inject(ctx, HeaderCarrier{&m.Headers})
}

// TraceOf returns the span context m's headers carry (its publish span), or
// an invalid one when they carry none.
func TraceOf(m kafka.Message) trace.SpanContext {
	hs := m.Headers
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), HeaderCarrier{&hs}))
}
