package tracing

import (
	"context"
	"log/slog"
	"time"
)

// FlushTimeout bounds the export of the spans still queued when a deployable
// stops: long enough for one OTLP request of a full batch to a collector
// that answers, short enough that a collector gone down does not eat the
// shutdown budget (ops.ExitAfter ends the process anyway).
const FlushTimeout = 3 * time.Second

// Logger returns log with the trace and span ids of a line's context on
// every line (LogHandler): every deployable's logger is wrapped with it
// (pkg/service), so the JSON logs of an order lead to its trace.
func Logger(log *slog.Logger) *slog.Logger { return slog.New(LogHandler(log.Handler())) }

// Init is a deployable's tracing from start to exit: Setup from the OTEL_*
// environment, and a stop to defer that flushes the spans still queued
// (within FlushTimeout) and logs a flush that failed. The deployables' runner
// (pkg/service) calls it, so stop runs after the last request or batch has
// ended its spans. An error is a setting that cannot work: the deployable stops.
func Init(ctx context.Context, service string, log *slog.Logger) (stop func(), err error) {
	p, err := Setup(ctx, service, log)
	if err != nil {
		return nil, err
	}
	return func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
		defer cancel()
		if err := p.Shutdown(fctx); err != nil {
			log.Warn("tracing: spans not flushed at exit", "err", err)
		}
	}, nil
}
