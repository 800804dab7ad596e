package tracing

import (
	"fmt"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// envSampler is the sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG
// name, with the specification's meanings and defaults (parentbased_always_on;
// a ratio argument defaults to 1.0). The SDK reads the same two variables
// only when no sampler is given; Setup gives one (linkSampler around this),
// so it must read them itself. A value the SDK does not implement
// (jaeger_remote, xray) or an argument outside [0, 1] is an error: a sampler
// that silently fell back to sampling everything would cost a sale.
func envSampler(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG=%q: want a ratio in [0, 1]", arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	}
	return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER=%q is not supported (always_on, always_off, traceidratio and their parentbased_ forms are)", name)
}

// linkSampler samples a root span that links to a sampled span, and leaves
// every other decision to base. The consumer's batch span is a root (a batch
// has many orders, so no single parent) linking to each message's publish
// span: under 1% sampling it must be recorded when one of its orders is,
// or the sampled order's trace would link to a batch and item transaction
// nobody kept. A batch none of whose orders is sampled is left to base.
type linkSampler struct{ base sdktrace.Sampler }

func (s linkSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if !trace.SpanContextFromContext(p.ParentContext).IsValid() {
		for _, l := range p.Links {
			if l.SpanContext.IsSampled() {
				return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
			}
		}
	}
	return s.base.ShouldSample(p)
}

func (s linkSampler) Description() string { return "LinkSampled{" + s.base.Description() + "}" }
