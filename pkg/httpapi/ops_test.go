package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/ops"
)

// opsHandler is what serves /readyz and /metrics.
func opsHandler(s *Server) http.Handler { return s.Ops() }

// uncachedReadyz is s's ops handler with the readiness result never
// cached, so every probe that does not join a round in flight runs s's
// checks: a test sees a dependency's change at its next probe instead of
// waiting out ops.DefaultReadinessCache.
func uncachedReadyz(s *Server) http.Handler {
	r := s.Readiness()
	r.CacheFor = -1
	return ops.Mux(prometheus.NewRegistry(), r)
}

// TestReadyzBoundedBySilentBroker: with a broker that accepts and never
// answers (SIGSTOPped), /readyz says 503 naming kafka (bounded by its
// timeout, not by the client giving up), and probing it again and again,
// uncached so each round runs the checks, leaves no goroutines or sockets
// growing.
func TestReadyzBoundedBySilentBroker(t *testing.T) {
	const timeout = 500 * time.Millisecond
	h := newHarness(t, harnessOpts{partitions: 1, storeTimeout: timeout})
	broker := testenv.Silent(t)
	cfg := h.srv.cfg
	cfg.Brokers = []string{broker.Addr}
	srv, err := New(cfg, Deps{DB: h.db, Stock: h.st, Publisher: h.writer, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(uncachedReadyz(srv))
	t.Cleanup(func() { broker.Stop(); ts.Close() }) // a hung handler would hold Close
	// The client gives up after 10 timeouts: only a hang guard. A silent
	// broker without the readiness bound holds /readyz until then, and the
	// probe fails with the client's error.
	client := &http.Client{Timeout: 10 * timeout}
	t.Cleanup(client.CloseIdleConnections)

	probe := func() error {
		start := time.Now()
		resp, err := client.Get(ts.URL + "/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var body struct {
			Checks map[string]string `json:"checks"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusServiceUnavailable || body.Checks["kafka"] == "ok" ||
			body.Checks["mysql"] != "ok" || body.Checks["redis"] != "ok" {
			t.Errorf("/readyz: %d %v after %v, want 503 with only kafka failing (timeout %v)", resp.StatusCode, body.Checks, time.Since(start), timeout)
		}
		return nil
	}
	if err := probe(); err != nil { // warm up pools before counting goroutines
		t.Fatalf("/readyz with a silent broker: %v", err)
	}
	before := runtime.NumGoroutine()
	const rounds, burst = 3, 10
	for r := range rounds {
		var wg sync.WaitGroup
		for range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := probe(); err != nil {
					t.Errorf("round %d: /readyz with a silent broker: %v", r, err)
				}
			}()
		}
		wg.Wait()
	}
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		return broker.Open() <= 1 && runtime.NumGoroutine() <= before+10
	}, "after %d probes: %v broker sockets open, goroutines %d -> %v", rounds*burst+1,
		lazy(func() string { return fmt.Sprint(broker.Open()) }), before, lazy(func() string { return fmt.Sprint(runtime.NumGoroutine()) }))
}

// TestOpsOffThePublicPort: /readyz and /metrics are served on the ops
// handler only; the public one keeps /healthz for load balancers.
func TestOpsOffThePublicPort(t *testing.T) {
	h := newHarness(t, harnessOpts{partitions: 1})
	for _, path := range []string{"/readyz", "/metrics"} {
		if r := h.do(http.MethodGet, path, "", nil); r.Code != http.StatusNotFound {
			t.Errorf("public GET %s: %d, want 404", path, r.Code)
		}
	}
	if r := h.do(http.MethodGet, "/healthz", "", nil); r.Code != http.StatusOK {
		t.Errorf("public GET /healthz: %d, want 200", r.Code)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		rec := httptest.NewRecorder()
		h.srv.Ops().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("ops GET %s: %d %s, want 200", path, rec.Code, rec.Body.Bytes())
		}
	}
}
