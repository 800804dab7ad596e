package tracing_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// BenchmarkOrderSpans is the tracing work of one order on the ingress and
// nothing else (no Redis, no Kafka: the CPU tracing adds, free of the
// stores' noise): the request span continued from a traceparent, the
// reserve and publish spans with their attributes, the traceparent
// injected into the message, as pkg/httpapi, pkg/admission and
// orderlog.Publisher do them; on, through Setup's real pipeline (batch
// processor, OTLP/HTTP to a local sink that drops). The caller is
// unsampled (flag 00) at 1%, as 99 in 100 would be. Compare with
// BenchmarkAdmissionTracing (pkg/tracing/stacktest), the whole order path.
func BenchmarkOrderSpans(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer sink.Close()
	log := slog.New(slog.DiscardHandler)
	for _, mode := range []struct{ name, exporter, ratio string }{
		{"off", "none", ""}, {"on_1pct", "otlp", "0.01"}, {"on_100pct", "otlp", "1"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			b.Setenv("OTEL_TRACES_EXPORTER", mode.exporter)
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
			b.Setenv("OTEL_TRACES_SAMPLER", "traceidratio") // the root's own decision: no caller's flag
			b.Setenv("OTEL_TRACES_SAMPLER_ARG", mode.ratio)
			stop, err := tracing.Init(context.Background(), "bench", log)
			if err != nil {
				b.Fatal(err)
			}
			defer stop()
			var tc propagation.TraceContext
			hdr := http.Header{}
			key, val := []byte("42"), []byte(`{"v":1}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx := context.Background()
				var span trace.Span
				if tracing.Enabled() { // as traceRequests
					ctx = tc.Extract(ctx, propagation.HeaderCarrier(hdr))
					ctx, span = tracing.Tracer().Start(ctx, "POST /api/v1/orders", trace.WithSpanKind(trace.SpanKindServer))
				} else {
					ctx, span = tracing.Start(ctx, "POST /api/v1/orders", trace.SpanKindServer)
				}
				_, rs := tracing.Start(ctx, "admission.reserve", trace.SpanKindClient)
				if rs.IsRecording() {
					rs.SetAttributes(attribute.String("db.system.name", "redis"), attribute.Int64("flashsale.item_id", 42),
						attribute.Int("flashsale.bucket", 0), attribute.String("flashsale.request_id", "42-0-abcdef"), attribute.String("flashsale.verdict", "ok"))
				}
				rs.End()
				pctx, ps := tracing.Start(ctx, "admission.publish", trace.SpanKindProducer)
				if trace.SpanContextFromContext(pctx).IsValid() { // as orderlog.Publisher: off, the message is not touched
					m := kafka.Message{Key: key, Value: val}
					orderlog.InjectTrace(pctx, &m)
				}
				if ps.IsRecording() {
					ps.SetAttributes(attribute.String("messaging.system", "kafka"), attribute.String("messaging.operation.type", "send"),
						attribute.String("messaging.kafka.message.key", "42"), attribute.String("flashsale.request_id", "42-0-abcdef"))
				}
				ps.End()
				if span.IsRecording() {
					span.SetAttributes(attribute.String("http.request.method", "POST"), attribute.String("http.route", "/api/v1/orders"),
						attribute.Int("http.response.status_code", 202), attribute.String("flashsale.http_request_id", "0123456789abcdef"))
				}
				span.End()
			}
		})
	}
}
