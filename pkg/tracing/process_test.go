package tracing

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// A deployable's stop returns within FlushTimeout even when the collector
// never answers (a listener that accepts and never reads; the exporter's
// own timeout is 10 s, with retries): a hung collector must not hold a
// shutdown. The failed flush is logged, and tracing is off afterwards.
func TestInitStopIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	// Locked: the SDK's export goroutine outlives a Shutdown that timed
	// out, and logs its failure when the export gives up.
	buf := &testenv.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, nil))
	stop, err := Init(context.Background(), "test", log)
	if err != nil || !Enabled() {
		t.Fatalf("Init: enabled %v err %v", Enabled(), err)
	}
	_, span := Start(context.Background(), "queued at exit", trace.SpanKindInternal)
	span.End()
	start := time.Now()
	stop()
	took := time.Since(start)
	if took > FlushTimeout+time.Second {
		t.Fatalf("stop took %v, want at most %v", took, FlushTimeout)
	}
	if Enabled() {
		t.Fatal("tracing still on after stop")
	}
	t.Logf("stop took %v", took)
	if !strings.Contains(buf.String(), "spans not flushed") {
		t.Fatalf("a failed flush was not logged: %s", buf.String())
	}
}

// Off (no OTEL_* settings), Init starts nothing and stop is harmless.
func TestInitOff(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	stop, err := Init(context.Background(), "test", slog.New(slog.DiscardHandler))
	if err != nil || Enabled() {
		t.Fatalf("Init off: enabled %v err %v", Enabled(), err)
	}
	stop()
}
