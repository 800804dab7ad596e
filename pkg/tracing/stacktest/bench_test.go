package stacktest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/inproc"
	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// BenchmarkAdmissionTracing is the cost of tracing on the order path: POST
// /api/v1/orders through the ingress's handler (in-process, no socket),
// admission's Redis script and its Kafka publish with acks, on the real
// stack, 32 buyers at a time, with tracing off, on at 1% and on at 100%.
// On is the deployables' own Setup from OTEL_* variables, exporting OTLP
// over HTTP to a local collector that reads and drops each request, so the
// SDK's batching, encoding and sending are in the cost. One op is one
// accepted order; run with -count and compare medians. cpu-us/op is the
// process's CPU time (user and system, every goroutine: the SDK's export
// included) per order, steadier than ns/op on a shared machine, where
// ns/op mostly measures the wait for Kafka's acks.
func BenchmarkAdmissionTracing(b *testing.B) {
	var exported atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		exported.Add(n)
		w.WriteHeader(http.StatusOK)
	}))
	defer sink.Close()

	stk := inproc.New(b)
	st := stock.New(stk.Redis).WithCoalescer(stock.NewCoalescer(stk.Redis, stock.CoalesceConfig{MaxBatch: 128, Flushers: 4}))
	in := inproc.Settings(secret)
	in.JWT.JWTCacheSize = 1 << 16
	pub := (*orderlog.Security)(nil).NewPublisher(stk.Brokers, stk.Topic, in.PublishTimeout, orderlog.DefaultBatching())
	b.Cleanup(func() { _ = pub.Close() }) // after the ingress (cleanups run last first)
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := stk.Ingress(b, in, inproc.Options{Stock: st, Publisher: pub, Log: log})
	e := srv.Echo()
	item := testenv.ItemID()
	body := fmt.Sprintf(`{"name":"bench","price_cents":1,"stock":100000000,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"buckets":1}`,
		time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339))
	admin, _ := auth.Sign(secret, 1, "admin", time.Hour)
	req := httptest.NewRequest(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", item), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("put item: %d %s", w.Code, w.Body)
	}
	orderBody := fmt.Sprintf(`{"item_id":%d,"qty":1}`, item)
	var users atomic.Int64
	users.Store(1000)

	for _, mode := range []struct{ name, exporter, ratio string }{
		{"off", "none", ""}, {"on_1pct", "otlp", "0.01"}, {"on_100pct", "otlp", "1"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			b.Setenv("OTEL_TRACES_EXPORTER", mode.exporter)
			b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
			b.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
			b.Setenv("OTEL_TRACES_SAMPLER_ARG", mode.ratio)
			stop, err := tracing.Init(context.Background(), "ingress", log)
			if err != nil {
				b.Fatal(err)
			}
			if tracing.Enabled() != (mode.exporter == "otlp") {
				b.Fatalf("tracing enabled %v in mode %s", tracing.Enabled(), mode.name)
			}
			before := exported.Load()
			var failed atomic.Int64
			b.SetParallelism(16) // 32 buyers in flight on 2 cores
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tok, _ := auth.Sign(secret, users.Add(1), "", time.Hour)
					req := httptest.NewRequest(http.MethodPost, "/api/v1/orders", strings.NewReader(orderBody))
					req.Header.Set("Authorization", "Bearer "+tok)
					req.Header.Set("Content-Type", "application/json")
					w := httptest.NewRecorder()
					e.ServeHTTP(w, req)
					if w.Code != http.StatusAccepted {
						failed.Add(1)
					}
				}
			})
			b.StopTimer()
			stop() // flushes: the exported bytes and CPU below include the last batch
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d orders not accepted", n, b.N)
			}
			b.ReportMetric(float64(exported.Load()-before)/float64(b.N), "otlp-B/op")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
