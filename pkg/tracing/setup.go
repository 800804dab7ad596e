package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Provider is the tracer provider Setup built; Shutdown flushes it. A
// Provider of tracing that is off has nothing to flush.
type Provider struct {
	tp *sdktrace.TracerProvider // nil: off
}

// On reports whether Setup turned tracing on.
func (p *Provider) On() bool { return p != nil && p.tp != nil }

// Shutdown exports the spans still queued and stops the exporter, within
// ctx. Every deployable calls it on exit, after its last request or batch:
// the spans of a sale's last second are the ones an incident needs.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.On() {
		return nil
	}
	Use(nil)
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// Setup turns tracing on or leaves it off, from the SDK's own environment
// variables (flashsale has no FLASHSALE_* setting of its own for traces):
//
//   - OTEL_SDK_DISABLED=true: off, whatever else is set.
//   - OTEL_TRACES_EXPORTER: "otlp" turns tracing on, "none" keeps it off.
//     Unset, tracing is on only when an OTLP endpoint is set
//     (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT).
//     The specification's default is "otlp"; flashsale's is off, so that a
//     deployable never sends spans, or tries to, unless asked to. Other
//     exporters (console, zipkin) are refused.
//   - The exporter is OTLP over HTTP/protobuf (otlptracehttp, which reads
//     OTEL_EXPORTER_OTLP_* itself: endpoint, headers, timeout, TLS files);
//     OTEL_EXPORTER_OTLP_PROTOCOL=grpc is refused rather than sent to the
//     wrong port.
//   - OTEL_TRACES_SAMPLER and _ARG pick the sampler (envSampler), wrapped so
//     a consumer batch linked to a sampled order is sampled (linkSampler).
//   - OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the process;
//     service defaults to the deployable's name. OTEL_BSP_* tune the batch
//     span processor (the SDK reads them).
//
// Propagation is W3C trace context (traceparent and tracestate), in HTTP
// and in Kafka message headers. An error is a setting that cannot work;
// the deployable stops with it, as with a bad FLASHSALE_* setting.
func Setup(ctx context.Context, service string, log *slog.Logger) (*Provider, error) {
	return setup(ctx, service, os.Getenv, log)
}

func setup(ctx context.Context, service string, getenv func(string) string, log *slog.Logger) (*Provider, error) {
	on, err := wanted(getenv)
	if err != nil || !on {
		return &Provider{}, err
	}
	sampler, err := envSampler(getenv)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			if v != "http/protobuf" {
				return nil, fmt.Errorf("tracing: %s=%q: this build exports OTLP over http/protobuf only", k, v)
			}
			break // the traces-specific one wins
		}
	}
	exp, err := otlptracehttp.New(ctx) // no connection yet: the first export dials
	if err != nil {
		return nil, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES: after the default, so they win
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	limits, err := spanLimits(getenv)
	if err != nil {
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(linkSampler{sampler}),
		sdktrace.WithRawSpanLimits(limits),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	// An export that fails (collector down) is logged, not fatal: spans
	// are dropped, orders go on. The JSON logger samples repeats.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: export failed", "err", err) }))
	Use(tp)
	log.Info("tracing on", "exporter", "otlp", "sampler", linkSampler{sampler}.Description())
	return &Provider{tp: tp}, nil
}

// MaxBatchLinks is the links a span keeps unless OTEL_SPAN_LINK_COUNT_LIMIT
// says otherwise: the largest consumer batch (FLASHSALE_BATCH_SIZE is at
// most 5,000), whose span links to each of its messages. The SDK's default,
// 128, kept the first 128 links of a 500-message batch (the default size)
// and dropped the rest: most orders' traces would lead to no batch.
const MaxBatchLinks = 5000

// spanLimits are the SDK's limits from the OTEL_SPAN_* and OTEL_*_LIMIT
// variables, with MaxBatchLinks as the link default. The SDK reads them
// from the process environment; Setup's variables come from getenv (tests
// give their own), so the link limit is read here from getenv too.
func spanLimits(getenv func(string) string) (sdktrace.SpanLimits, error) {
	l := sdktrace.NewSpanLimits()
	l.LinkCountLimit = MaxBatchLinks
	if v := strings.TrimSpace(getenv("OTEL_SPAN_LINK_COUNT_LIMIT")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return l, fmt.Errorf("tracing: OTEL_SPAN_LINK_COUNT_LIMIT=%q: want an integer", v)
		}
		l.LinkCountLimit = n // negative: unlimited, as the SDK reads it
	}
	return l, nil
}

// wanted decides on or off from OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER and
// the OTLP endpoints (see Setup).
func wanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	exporters := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exporters == "" {
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	}
	on := false
	for _, e := range strings.Split(exporters, ",") {
		switch strings.ToLower(strings.TrimSpace(e)) {
		case "otlp":
			on = true
		case "none":
		default:
			return false, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q: only otlp and none are supported", exporters)
		}
	}
	return on, nil
}
