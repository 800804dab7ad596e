package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestReadinessDegradedByAnOptionalCheck: the ingress admits with Redis and
// Kafka alone, so a MySQL outage must not take it out of its Service.
func TestReadinessDegradedByAnOptionalCheck(t *testing.T) {
	down := errors.New("connection refused")
	h := ReadinessHandler(Readiness{Timeout: time.Second, CacheFor: -1, Optional: map[string]bool{"mysql": true},
		Checks: map[string]Check{
			"redis": func(context.Context) error { return nil },
			"mysql": func(context.Context) error { return down },
		}})
	code, body := probe(t, h, 2*time.Second)
	if code != http.StatusOK || body["status"] != "degraded" {
		t.Fatalf("optional mysql down: %d %v, want 200 degraded", code, body)
	}
	if checks, _ := body["checks"].(map[string]any); checks["mysql"] != "connection refused" || checks["redis"] != "ok" {
		t.Fatalf("checks %v, want mysql's error and redis ok", body["checks"])
	}
}

func TestReadinessUnavailableWhenARequiredCheckFails(t *testing.T) {
	h := ReadinessHandler(Readiness{Timeout: time.Second, CacheFor: -1, Optional: map[string]bool{"mysql": true},
		Checks: map[string]Check{
			"redis": func(context.Context) error { return errors.New("refused") },
			"mysql": func(context.Context) error { return nil },
		}})
	if code, body := probe(t, h, 2*time.Second); code != http.StatusServiceUnavailable || body["status"] != "unavailable" {
		t.Fatalf("required redis down: %d %v, want 503 unavailable", code, body)
	}
}

// TestWatchDependenciesExportsAndLogsEachChange: the gauge follows the
// dependency, and a state change is logged once, not once per pass.
func TestWatchDependenciesExportsAndLogsEachChange(t *testing.T) {
	var failing atomic.Bool
	var passes atomic.Int64
	failing.Store(true)
	reg := prometheus.NewRegistry()
	up := NewDependencyGauge(reg)
	var logs testenv.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchDependencies(ctx, Readiness{Timeout: time.Second, Checks: map[string]Check{
			"kafka": func(context.Context) error { return nil },
			"mysql": func(context.Context) error {
				passes.Add(1)
				if failing.Load() {
					return errors.New("dial tcp 127.0.0.1:3306: connection refused")
				}
				return nil
			},
		}}, 10*time.Millisecond, up, log)
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, cond, "%s: gauges and logs %v", what, gaugesNow{up, &logs})
	}
	waitFor("mysql down", func() bool {
		return testutil.ToFloat64(up.WithLabelValues("kafka")) == 1 && strings.Contains(logs.String(), "dependency down")
	})
	if v := testutil.ToFloat64(up.WithLabelValues("mysql")); v != 0 {
		t.Fatalf("mysql down: gauge %v, want 0", v)
	}
	since := passes.Load()
	waitFor("several more passes, still down", func() bool { return passes.Load() >= since+3 })
	failing.Store(false)
	waitFor("mysql back", func() bool { return testutil.ToFloat64(up.WithLabelValues("mysql")) == 1 })
	waitFor("mysql back logged", func() bool { return strings.Contains(logs.String(), "dependency up") })
	cancel()
	<-done
	if n := strings.Count(logs.String(), "dependency down"); n != 1 {
		t.Fatalf("%d 'dependency down' lines over several failing passes, want 1:\n%s", n, logs.String())
	}
}

// gaugesNow prints the dependency gauges and the logs when a failure is
// reported, not when the wait started.
type gaugesNow struct {
	up   *prometheus.GaugeVec
	logs *testenv.LogBuffer
}

func (g gaugesNow) String() string {
	return fmt.Sprintf("mysql=%v kafka=%v, logs:\n%s", testutil.ToFloat64(g.up.WithLabelValues("mysql")),
		testutil.ToFloat64(g.up.WithLabelValues("kafka")), g.logs.String())
}

// TestWaitForRetriesUntilTheDependencyAnswers: a deployable started during
// an outage waits (and says so) instead of exiting into a crash loop.
func TestWaitForRetriesUntilTheDependencyAnswers(t *testing.T) {
	var calls atomic.Int32
	var logs testenv.LogBuffer
	err := WaitFor(context.Background(), "mysql", func(context.Context) error {
		if calls.Add(1) < 4 {
			return errors.New("connection refused")
		}
		return nil
	}, time.Second, 5*time.Millisecond, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil || calls.Load() != 4 {
		t.Fatalf("WaitFor = %v after %d calls, want nil after 4", err, calls.Load())
	}
	if !strings.Contains(logs.String(), "waiting for mysql") {
		t.Fatalf("logs %q, want a 'waiting for mysql' line", logs.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitFor(ctx, "mysql", func(context.Context) error { return errors.New("refused") }, time.Second, time.Millisecond,
		slog.New(slog.NewTextHandler(&logs, nil))); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor on a cancelled context = %v, want context.Canceled", err)
	}
}
