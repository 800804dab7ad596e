package orderwriter

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// The consumer's span names.
const (
	// SpanBatch is one round: a root span (a batch holds many orders, so
	// it has no one parent) linking to the publish span of every message
	// it holds, so each order's trace leads to the batch that wrote it
	// and the batch to each of its orders.
	SpanBatch = "consumer.batch"
	// SpanItemTx is one attempt of an item's MySQL transaction, a child
	// of its batch: every retry is a span of its own.
	SpanItemTx = "consumer.item_tx"
	// SpanAfterCommit is the Redis step after an item's commit.
	SpanAfterCommit = "consumer.after_commit"
)

// startBatch starts round's span over batch. Off, it returns ctx and a
// no-op span without looking at a header.
func (c *Consumer) startBatch(ctx context.Context, batch []*entry) (context.Context, trace.Span) {
	if !tracing.Enabled() {
		return tracing.Start(ctx, SpanBatch, trace.SpanKindConsumer)
	}
	links := make([]trace.Link, 0, len(batch))
	for _, e := range batch {
		if sc := orderlog.TraceOf(e.msg); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
				attribute.Int("messaging.destination.partition.id", e.msg.Partition), attribute.Int64("messaging.kafka.offset", e.msg.Offset)}})
		}
	}
	return tracing.Tracer().Start(ctx, SpanBatch, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("messaging.system", "kafka"), attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", c.cfg.Topic), attribute.String("messaging.consumer.group.name", c.cfg.GroupID),
			attribute.Int("messaging.batch.message_count", len(batch))))
}

// startItemTx starts the span of one attempt of item's transaction over n
// messages.
func startItemTx(ctx context.Context, item int64, n int) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, SpanItemTx, trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("db.system.name", "mysql"), attribute.Int64("flashsale.item_id", item), attribute.Int("flashsale.messages", n))
	}
	return ctx, span
}

// endItemTx records the attempt's outcome on span and ends it.
func endItemTx(span trace.Span, res ItemResult, err error) {
	if span.IsRecording() {
		if err == nil {
			span.SetAttributes(attribute.Int("flashsale.ordered", len(res.Ordered)), attribute.Int("flashsale.rejected", len(res.Rejected)),
				attribute.Bool("flashsale.fallback", res.Fallback))
		}
		tracing.Fail(span, err)
	}
	span.End()
}

// endBatchTx records a set-based batch attempt over items on span (started
// by startItemTx with item 0) and ends it.
// flashsale.apart_items counts the items it set apart (stock short or row
// locked elsewhere) to be written one at a time.
func endBatchTx(span trace.Span, items int, res []ItemResult, apart []int, err error) {
	if span.IsRecording() {
		ordered, rejected := 0, 0
		for _, r := range res {
			ordered += len(r.Ordered)
			rejected += len(r.Rejected)
		}
		span.SetAttributes(attribute.Int("flashsale.items", items), attribute.Int("flashsale.apart_items", len(apart)))
		if err == nil && apart == nil {
			span.SetAttributes(attribute.Int("flashsale.ordered", ordered), attribute.Int("flashsale.rejected", rejected))
		}
		tracing.Fail(span, err)
	}
	span.End()
}
