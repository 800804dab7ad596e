package testenv

import (
	"context"
	"errors"
	"testing"
)

// Background runs run(ctx) on its own goroutine for the rest of the test:
// a consumer, a reaper, anything the test relies on running beside it. At
// cleanup it cancels ctx and waits for run to return. A run that returned
// before the cleanup (it stopped while the test relied on it), or that
// returns an error other than the cancellation once cancelled, fails the
// test under name. (Checking the error only after cancelling, as two tests
// did, can never see the first: ctx.Err() is set by then.)
func Background(t testing.TB, name string, run func(ctx context.Context) error) {
	t.Helper()
	background(t, name, run)
}

// background is Background; the channel it returns is closed once run's
// result is there for the cleanup to see, which its test waits for: run
// returning is not yet that (the result is handed over just after).
func background(t testing.TB, name string, run func(ctx context.Context) error) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ended := make(chan struct{})
	go func() {
		done <- run(ctx)
		close(ended)
	}()
	t.Cleanup(func() {
		select {
		case err := <-done:
			cancel()
			t.Errorf("%s stopped before the test ended: %v", name, err)
			return
		default:
		}
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("%s at shutdown: %v", name, err)
		}
	})
	return ended
}
