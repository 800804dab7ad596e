package ops

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// NewDependencyGauge registers flashsale_dependency_up{dependency}: 1 while
// the dependency answers its check, 0 while it does not. /readyz says the
// same to the kubelet; the gauge says it to dashboards and alerts, also for
// a replica whose readiness nobody probes.
func NewDependencyGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flashsale_dependency_up",
		Help: "1 while the dependency (mysql, redis, kafka, auth) answered this process's last check, else 0.",
	}, []string{"dependency"})
	reg.MustRegister(g)
	return g
}

// WatchDependencies runs every check of r (each bounded by r.Timeout) once
// every interval until ctx ends, sets up{dependency} from each result, and
// logs each change of state once: a dependency going down (warn, with its
// error) and coming back (info), not every failing pass. Run it in its own
// goroutine; it returns when ctx ends.
func WatchDependencies(ctx context.Context, r Readiness, every time.Duration, up *prometheus.GaugeVec, log *slog.Logger) {
	state := map[string]bool{} // last result; absent before the first
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		results := checkAll(ctx, r)
		if ctx.Err() != nil {
			return
		}
		for name, err := range results {
			ok := err == nil
			if ok {
				up.WithLabelValues(name).Set(1)
			} else {
				up.WithLabelValues(name).Set(0)
			}
			was, seen := state[name]
			switch {
			case !ok && (!seen || was):
				log.Warn("dependency down", "dependency", name, "optional", r.Optional[name], "err", err)
			case ok && seen && !was:
				log.Info("dependency up", "dependency", name)
			}
			state[name] = ok
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkAll runs every check at once and waits for all of them, each bounded
// by r.Timeout (a check that ignores its context is reported as timed out).
func checkAll(ctx context.Context, r Readiness) map[string]error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := make(map[string]error, len(r.Checks))
	for name, c := range r.Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := bounded(ctx, r.Timeout, c)
			mu.Lock()
			out[name] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func bounded(ctx context.Context, timeout time.Duration, c Check) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c(cctx) }()
	select {
	case err := <-done:
		return err
	case <-cctx.Done():
		if ctx.Err() != nil {
			return ctx.Err() // the caller gave up, not the dependency
		}
		return fmt.Errorf("no answer within %v: %w", timeout, cctx.Err())
	}
}

// WaitFor calls check (bounded by timeout) until it succeeds, every
// interval, logging the first failure and every 15th as "waiting for NAME", so a deployable
// started during an outage waits for it, visibly, instead of exiting into
// a crash loop. It returns ctx's error, joined with the last failure, when
// ctx ends first.
func WaitFor(ctx context.Context, name string, check Check, timeout, interval time.Duration, log *slog.Logger) error {
	for attempt := 1; ; attempt++ {
		err := bounded(ctx, timeout, check)
		if err == nil {
			if attempt > 1 {
				log.Info("dependency answers", "dependency", name, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for %s: %w (last error: %w)", name, ctx.Err(), err)
		}
		// The first failure, then one line in 15: a long outage should not
		// flood the logs of every replica.
		if attempt%15 == 1 {
			log.Warn("waiting for "+name, "dependency", name, "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %w)", name, ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}
