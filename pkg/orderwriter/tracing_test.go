package orderwriter_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// The log line of a dead-lettered message carries the trace id its
// traceparent header names (the POST that admitted it), even with tracing
// off in the consumer: an operator reading the letter's line finds the
// order's trace and its ingress lines.
func TestDeadLetterLineCarriesTheOrdersTraceID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 10, 10)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Topic: e.topic, RequiredAcks: kafka.RequireAll, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("{not json"),
		Headers: []kafka.Header{{Key: "traceparent", Value: []byte("00-" + traceID + "-00f067aa0ba902b7-01")}}}); err != nil {
		t.Fatal(err)
	}
	var buf testenv.LogBuffer
	log := tracing.Logger(slog.New(slog.NewJSONHandler(&buf, nil)))
	c, err := orderwriter.New(e.config(), orderwriter.Deps{DB: e.db, Stock: e.st}, orderwriter.NewMetrics(prometheus.NewRegistry()), log)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	defer func() { stop(); <-done }()
	testenv.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool { return strings.Contains(buf.String(), "dead-lettered message") },
		"no dead-letter line; log:\n%s", &buf)
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "dead-lettered message") && !strings.Contains(line, `"trace_id":"`+traceID+`"`) {
			t.Fatalf("dead-letter line without the order's trace id: %s", line)
		}
	}
}
