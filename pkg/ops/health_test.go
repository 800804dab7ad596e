package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// probe GETs /readyz from h and fails the test if it has not answered
// within: a hang guard, generous (ten times the checks' timeout or more),
// not a speed bound; the old handler waited for every check, however long,
// so a check that never returns held it forever. Safe to call from any
// goroutine: it reports with Errorf and returns status 0.
func probe(t *testing.T, h http.Handler, within time.Duration) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	}()
	select {
	case <-done:
	case <-time.After(within):
		t.Errorf("/readyz did not answer within %v", within)
		return 0, nil
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Errorf("/readyz body %q: %v", rec.Body.Bytes(), err)
	}
	return rec.Code, body
}

// TestReadinessBoundedWhenACheckHangs: a check that ignores its context
// (a driver without deadlines) must not hold /readyz past its timeout, and
// repeated probes must not pile up goroutines behind it: at most one run of
// each check is in flight.
func TestReadinessBoundedWhenACheckHangs(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var hung, fine atomic.Int64
	const timeout = 200 * time.Millisecond
	h := newProber(Readiness{Timeout: timeout, Checks: map[string]Check{
		"stuck": func(context.Context) error { hung.Add(1); <-release; return nil },
		"fine":  func(context.Context) error { fine.Add(1); return nil },
	}})
	clk := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	h.now = clk.Now
	before := runtime.NumGoroutine()
	const rounds, burst = 3, 20
	for r := range rounds {
		var wg sync.WaitGroup
		for range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, body := probe(t, h, 10*timeout)
				checks, _ := body["checks"].(map[string]any)
				if code != http.StatusServiceUnavailable || checks["fine"] != "ok" || checks["stuck"] == "ok" {
					t.Errorf("round %d: %d %v, want 503 with fine ok and stuck failing", r, code, body)
				}
			}()
		}
		wg.Wait()
		if r < rounds-1 {
			clk.Step(DefaultReadinessCache) // past the cache period
		}
	}
	if n := hung.Load(); n != 1 {
		t.Errorf("the hung check was started %d times, want 1 (it is still in flight)", n)
	}
	if n := fine.Load(); n != rounds {
		t.Errorf("the fine check ran %d times in %d cache periods, want %d", n, rounds, rounds)
	}
	// One goroutine for the hung check, whatever the number of probes: the
	// probes' and rounds' goroutines, which have answered, all end.
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return runtime.NumGoroutine() <= before+3 },
		"goroutines grew from %d to %d after %d probes", before, lazyGoroutines{}, rounds*burst)
}

// TestReadinessCachedForABurst: a burst of probes within a cache period runs
// each check once; after the period the checks run again.
func TestReadinessCachedForABurst(t *testing.T) {
	var runs atomic.Int64
	h := newProber(Readiness{Timeout: time.Second, Checks: map[string]Check{
		"slow": func(ctx context.Context) error {
			runs.Add(1)
			select {
			case <-time.After(50 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}})
	clk := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	h.now = clk.Now
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, body := probe(t, h, 2*time.Second); code != http.StatusOK {
				t.Errorf("probe: %d %v", code, body)
			}
		}()
	}
	wg.Wait()
	for range 20 { // sequential probes inside the same period
		probe(t, h, 2*time.Second)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("70 probes within a cache period ran the check %d times, want 1", n)
	}
	clk.Step(DefaultReadinessCache)
	probe(t, h, 2*time.Second)
	if n := runs.Load(); n != 2 {
		t.Fatalf("after the cache period the check ran %d times in all, want 2", n)
	}
}

// TestReadinessProbeGoneDoesNotPoisonTheCache: a prober that hangs up must
// not leave "context canceled" as the cached answer for the next one.
func TestReadinessProbeGoneDoesNotPoisonTheCache(t *testing.T) {
	h := ReadinessHandler(Readiness{Timeout: time.Second, Checks: map[string]Check{
		"slow": func(ctx context.Context) error {
			select {
			case <-time.After(100 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/readyz", nil).WithContext(ctx))
	if code, body := probe(t, h, 2*time.Second); code != http.StatusOK {
		t.Fatalf("probe after a cancelled one: %d %v, want 200", code, body)
	}
}

// lazyGoroutines prints the goroutine count when a failure is reported.
type lazyGoroutines struct{}

func (lazyGoroutines) String() string { return strconv.Itoa(runtime.NumGoroutine()) }
