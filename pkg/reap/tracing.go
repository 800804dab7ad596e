package reap

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// The reaper's span names. A pass is a trace of its own (the reaper acts
// on its clock, for no request); its steps are children, and each cancel
// batch a child of its step. An order's row carries no trace context, so
// a cancel is found by time and item, not by the order's trace.
const (
	// SpanPass is one pass of the four steps.
	SpanPass = "reaper.pass"
	// SpanStep is one step of a pass; its flashsale.step attribute names it.
	SpanStep = "reaper.step"
	// SpanCancel is one claimed batch of expired orders: its MySQL
	// transaction and the Redis restore of its stock.
	SpanCancel = "reaper.cancel"
)

// startStep starts the span of the pass's step name.
func startStep(ctx context.Context, name string) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, SpanStep, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("flashsale.step", name))
	}
	return ctx, span
}
