package tracing

import (
	"context"
	"io"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// Off by default: only an OTLP exporter asked for (by name, or by giving an
// endpoint) turns tracing on; OTEL_SDK_DISABLED wins over both.
func TestWanted(t *testing.T) {
	cases := []struct {
		env  map[string]string
		on   bool
		fail bool
	}{
		{env: nil, on: false},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, on: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, on: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, fail: true},
	}
	for _, c := range cases {
		on, err := wanted(envOf(c.env))
		if (err != nil) != c.fail || on != c.on {
			t.Errorf("env %v: on %v err %v, want on %v fail %v", c.env, on, err, c.on, c.fail)
		}
	}
}

// With tracing off Setup starts nothing: spans are no-ops, Shutdown has
// nothing to flush.
func TestSetupOffIsNoop(t *testing.T) {
	p, err := setup(context.Background(), "test", envOf(nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || p.On() || Enabled() {
		t.Fatalf("setup off: provider on %v, enabled %v, err %v", p.On(), Enabled(), err)
	}
	ctx := context.Background()
	got, span := Start(ctx, "x", trace.SpanKindInternal)
	if got != ctx || span.IsRecording() || span.SpanContext().IsValid() {
		t.Fatal("Start made a span while tracing is off")
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// Tracing on builds a provider without dialing (the exporter connects on
// its first export) and Shutdown turns it off again.
func TestSetupOn(t *testing.T) {
	p, err := setup(context.Background(), "test", envOf(map[string]string{
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || !p.On() || !Enabled() {
		t.Fatalf("setup on: provider on %v, enabled %v, err %v", p.On(), Enabled(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0) // nothing to export: no wait
	defer cancel()
	_ = p.Shutdown(ctx)
	if Enabled() {
		t.Fatal("tracing still on after Shutdown")
	}
	if _, err := setup(context.Background(), "test", envOf(map[string]string{
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}), slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("grpc protocol accepted by the http exporter")
	}
}

// The sampler names mean what the specification says; an argument out of
// range or a sampler this SDK lacks is refused, not replaced by sampling
// everything.
func TestEnvSampler(t *testing.T) {
	cases := map[string]string{
		"":                         "ParentBased{root:AlwaysOnSampler",
		"always_off":               "AlwaysOffSampler",
		"traceidratio":             "TraceIDRatioBased{1}",
		"parentbased_traceidratio": "ParentBased{root:TraceIDRatioBased{0.01}",
	}
	for name, want := range cases {
		arg := ""
		if name == "parentbased_traceidratio" {
			arg = "0.01"
		}
		s, err := envSampler(envOf(map[string]string{"OTEL_TRACES_SAMPLER": name, "OTEL_TRACES_SAMPLER_ARG": arg}))
		if err != nil || len(s.Description()) < len(want) || s.Description()[:len(want)] != want {
			t.Errorf("%q: %v %v, want %s...", name, s, err, want)
		}
	}
	for _, bad := range []map[string]string{
		{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
		{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "one"},
		{"OTEL_TRACES_SAMPLER": "jaeger_remote"},
	} {
		if _, err := envSampler(envOf(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// A root span linking to a sampled span is sampled even when the ratio
// would drop it; one linking to none is left to the ratio; a child follows
// its parent.
func TestLinkSampler(t *testing.T) {
	s := linkSampler{sdktrace.ParentBased(sdktrace.NeverSample())}
	sampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, Remote: true})
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{2}, SpanID: trace.SpanID{2}, Remote: true})
	root := context.Background()
	if d := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: root, TraceID: trace.TraceID{9}, Links: []trace.Link{{SpanContext: unsampled}, {SpanContext: sampled}}}).Decision; d != sdktrace.RecordAndSample {
		t.Errorf("root linked to a sampled span: %v", d)
	}
	if d := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: root, TraceID: trace.TraceID{9}, Links: []trace.Link{{SpanContext: unsampled}}}).Decision; d != sdktrace.Drop {
		t.Errorf("root linked to unsampled spans: %v", d)
	}
	child := trace.ContextWithRemoteSpanContext(root, unsampled)
	if d := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: child, TraceID: trace.TraceID{2}, Links: []trace.Link{{SpanContext: sampled}}}).Decision; d != sdktrace.Drop {
		t.Errorf("child of an unsampled parent: %v", d)
	}
}

// A consumer batch span links to each of its messages (up to
// FLASHSALE_BATCH_SIZE's 5,000): the SDK's default keeps 128 links and
// drops the rest, which left most orders of a 500-message batch (the
// default size) without a way from their trace to the batch that wrote
// them. OTEL_SPAN_LINK_COUNT_LIMIT still wins when set.
func TestSetupKeepsABatchsLinks(t *testing.T) {
	links := make([]trace.Link, 5000)
	for i := range links {
		links[i] = trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, byte(i), byte(i >> 8)}, SpanID: trace.SpanID{1}})}
	}
	for _, c := range []struct {
		limit string
		want  int
	}{{"", 5000}, {"10", 10}} {
		p, err := setup(context.Background(), "test", envOf(map[string]string{
			"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SPAN_LINK_COUNT_LIMIT": c.limit}),
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		_, span := Tracer().Start(context.Background(), "batch", trace.WithNewRoot(), trace.WithLinks(links...))
		got := len(span.(sdktrace.ReadOnlySpan).Links())
		span.End()
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		_ = p.Shutdown(ctx)
		cancel()
		if got != c.want {
			t.Errorf("OTEL_SPAN_LINK_COUNT_LIMIT=%q: %d links kept, want %d", c.limit, got, c.want)
		}
	}
}

// Off, a span costs no allocation: Start, the IsRecording guard, Fail and
// End on the no-op span.
func TestStartOffAllocatesNothing(t *testing.T) {
	Use(nil)
	ctx := context.Background()
	err := context.Canceled
	if n := testing.AllocsPerRun(1000, func() {
		_, span := Start(ctx, "x", trace.SpanKindClient)
		if span.IsRecording() {
			t.Fatal("recording while off")
		}
		Fail(span, err)
		span.End()
	}); n != 0 {
		t.Fatalf("%v allocations per span while off", n)
	}
}
