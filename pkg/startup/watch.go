package startup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/pkg/ops"
)

// WatchEvery is how often flashsale_dependency_up is refreshed.
const WatchEvery = 5 * time.Second

// ErrRefused marks a start-up check that refused a store (an unfit server,
// a schema behind the binary): the deployable stops, as it would have
// before serving.
var ErrRefused = errors.New("start-up check refused")

// Watch is for a deployable that serves while it waits for its stores (the
// ingress: /healthz and /readyz must answer during a failover, or the
// kubelet restarts it into the crash loop waiting avoids). It runs each
// check (Checks.MySQL, Checks.Redis) in the background; one that refuses
// cancels ctx with ErrRefused and the reason, which Refused returns. It
// keeps up (flashsale_dependency_up) from r's checks, logging each change,
// until ctx ends, and returns then.
func Watch(ctx context.Context, cancel context.CancelCauseFunc, r ops.Readiness, up *prometheus.GaugeVec, log *slog.Logger,
	checks ...func(context.Context) error) {
	var wg sync.WaitGroup
	for _, check := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := check(ctx); err != nil && ctx.Err() == nil {
				log.Error("start-up check refused; stopping", "err", err)
				cancel(fmt.Errorf("%w: %w", ErrRefused, err))
			}
		}()
	}
	ops.WatchDependencies(ctx, r, WatchEvery, up, log)
	wg.Wait()
}

// Refused returns the reason a Watch check cancelled ctx with, nil if none
// did.
func Refused(ctx context.Context) error {
	if err := context.Cause(ctx); errors.Is(err, ErrRefused) {
		return err
	}
	return nil
}
