package ops

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Check reports whether one dependency is reachable.
type Check func(ctx context.Context) error

// Readiness runs named checks concurrently with a timeout.
type Readiness struct {
	Timeout time.Duration
	Checks  map[string]Check
}

// Run returns each check's error text ("" = ok) and whether all passed.
func (r Readiness) Run(ctx context.Context) (map[string]string, bool) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	out := make(map[string]string, len(r.Checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok := true
	for name, c := range r.Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out[name] = err.Error()
				ok = false
			} else {
				out[name] = "ok"
			}
		}()
	}
	wg.Wait()
	return out, ok
}

// LivenessHandler answers 200 while the process runs.
func LivenessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
}

// ReadinessHandler answers 200 when every check passes, else 503, with the
// per-dependency results as JSON.
func ReadinessHandler(r Readiness) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		res, ok := r.Run(req.Context())
		w.Header().Set("Content-Type", "application/json")
		status := "ok"
		if !ok {
			status = "unavailable"
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "checks": res})
	})
}
