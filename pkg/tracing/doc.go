// Package tracing is flashsale's OpenTelemetry tracing: the one place that
// builds the tracer provider from the SDK's own OTEL_* environment (Setup),
// the span starters the traced packages use (Start, Tracer), and the slog
// handler that puts trace and span ids in the JSON logs (LogHandler).
//
// Tracing is off unless the environment asks for an exporter (see Setup).
// Off, Start returns the context it was given and a no-op span: the order
// path allocates nothing for tracing and makes no network call, so the
// default costs a sale nothing (TestStartOffAllocatesNothing, httpapi's
// TestTraceRequestsOffAllocatesNothing; BenchmarkAdmissionTracing in
// pkg/tracing/stacktest measures off, 1% and 100% on the real stack).
//
// It owns the process-wide tracer provider (Use, Enabled) and the sampler that
// keeps a sampled order's batch (sampler.go). Importers: pkg/service (Init,
// Logger) and the traced packages, pkg/admission, pkg/httpapi, pkg/orderwriter
// and pkg/reap. It imports no other package of the module, so any of them can,
// and it reads its settings from the OTEL_* environment, not from pkg/config.
package tracing
