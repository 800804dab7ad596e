package startup_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/startup"
)

// TestWatchStopsTheDeployableOnARefusal: a serving ingress whose schema
// turns out to be behind it stops, with the reason, as it would have
// before serving.
func TestWatchStopsTheDeployableOnARefusal(t *testing.T) {
	behind := errors.New("schema: 0003 not applied; run setup")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		startup.Watch(ctx, cancel, ops.Readiness{Timeout: time.Second}, ops.NewDependencyGauge(prometheus.NewRegistry()),
			slog.New(slog.DiscardHandler),
			func(context.Context) error { return nil },
			func(context.Context) error { return behind })
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not stop after a refusal")
	}
	if err := startup.Refused(ctx); !errors.Is(err, startup.ErrRefused) || !errors.Is(err, behind) {
		t.Fatalf("Refused = %v, want ErrRefused wrapping the check's error", err)
	}
}

func TestRefusedIsNilForAnOrdinaryShutdown(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(nil)
	if err := startup.Refused(ctx); err != nil {
		t.Fatalf("Refused after a plain cancel = %v, want nil", err)
	}
}
