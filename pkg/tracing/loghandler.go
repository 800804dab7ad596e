package tracing

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// LogHandler wraps h so that every record logged with a context that holds a
// span carries that span's "trace_id" and "span_id" (W3C hex): a log line
// of a slow or failed order leads to its trace, and a trace to its lines.
// The ids are added whether or not the span is sampled, so the lines of
// one request still share a trace_id across the ingress and the consumer
// when its spans were not exported. Records without such a context
// (startup, background loops logging without one) are passed on as they
// are. Under a WithGroup the ids land in the group (no flashsale logger
// opens one).
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }
