package httpapi

import (
	"encoding/json"
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
)

// opsHandler is what serves /readyz and /metrics.
func opsHandler(s *Server) http.Handler { return s.Ops() }

// TestReadyzBoundedBySilentBroker: with a broker that accepts and never
// answers (SIGSTOPped), /readyz says 503 within its timeout, naming kafka,
// and probing it again and again leaves no goroutines or sockets growing.
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
	ts := httptest.NewServer(opsHandler(srv))
	t.Cleanup(func() { broker.Stop(); ts.Close() }) // a hung handler would hold Close
	client := &http.Client{Timeout: timeout + time.Second}
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
		// Bounded means the check's timeout plus scheduling, not a latency
		// target: a silent broker without the bound holds /readyz until the
		// client gives up (timeout + 1 s). 300 ms of slack was missed by
		// 9 ms under make test's parallel -race load (809 ms).
		if d := time.Since(start); resp.StatusCode != http.StatusServiceUnavailable || body.Checks["kafka"] == "ok" ||
			body.Checks["mysql"] != "ok" || body.Checks["redis"] != "ok" || d > 2*timeout {
			t.Errorf("/readyz: %d %v after %v, want 503 with only kafka failing within %v", resp.StatusCode, body.Checks, d, timeout)
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
		time.Sleep(1100 * time.Millisecond) // past the readiness cache
	}
	deadline := time.Now().Add(3 * time.Second)
	for broker.Open() > 1 || runtime.NumGoroutine() > before+10 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d probes: %d broker sockets open, goroutines %d -> %d", rounds*burst+1, broker.Open(), before, runtime.NumGoroutine())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
