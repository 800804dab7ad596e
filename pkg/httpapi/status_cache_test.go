package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestRequestCacheOneLoadPerTTL races many pollers at unknown request ids:
// MySQL is asked once per id while "no such request" is fresh, however the
// pollers' checks interleave with the flight that records the miss (a
// poller that checked just before the miss was recorded and joined just
// after that flight ended used to start a second query: the make test run
// of 2026-12-06 saw 2 queries for one id within 116 ms). Once the TTL has
// passed on the injected clock, one more load, and a found state is shared.
func TestRequestCacheOneLoadPerTTL(t *testing.T) {
	var clock atomic.Int64 // nanoseconds since base
	base := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	c := newRequestCache()
	c.now = func() time.Time { return base.Add(time.Duration(clock.Load())) }
	loads := map[string]*atomic.Int64{}
	const ids, pollers = 200, 32
	for i := range ids {
		loads[fmt.Sprint(i)] = new(atomic.Int64)
	}
	unknown := func(rid string) func(context.Context) (store.RequestState, error) {
		return func(context.Context) (store.RequestState, error) {
			loads[rid].Add(1)
			return store.RequestState{}, store.ErrNotFound
		}
	}
	poll := func() {
		var wg sync.WaitGroup
		for i := range ids {
			rid := fmt.Sprint(i)
			for range pollers {
				wg.Go(func() {
					if _, err := c.read(context.Background(), rid, unknown(rid)); !errors.Is(err, store.ErrNotFound) {
						t.Errorf("read %s: %v, want ErrNotFound", rid, err)
					}
				})
			}
		}
		wg.Wait()
	}
	poll()
	for rid, n := range loads {
		if got := n.Load(); got != 1 {
			t.Fatalf("request %s: %d loads by %d pollers within one TTL, want 1", rid, got, pollers)
		}
	}
	clock.Add(int64(unknownRequestTTL))
	poll()
	for rid, n := range loads {
		if got := n.Load(); got != 2 {
			t.Fatalf("request %s: %d loads after the TTL passed, want 2", rid, got)
		}
	}
	found := store.RequestState{Decision: store.Decision{RequestID: "x", Outcome: store.Aborted}}
	st, err := c.read(context.Background(), "x", func(context.Context) (store.RequestState, error) { return found, nil })
	if err != nil || st.Decision.RequestID != "x" {
		t.Fatalf("found state: %+v, %v", st, err)
	}
}

// TestRequestCacheCallerGivesUp: a poller whose context ends stops waiting
// with its context's error, while the shared load goes on for the others.
func TestRequestCacheCallerGivesUp(t *testing.T) {
	c := newRequestCache()
	release := make(chan struct{})
	load := func(ctx context.Context) (store.RequestState, error) {
		<-release
		return store.RequestState{}, ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.read(ctx, "r", load); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.read(context.Background(), "r", load)
		done <- err
	}()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the load went on detached from the caller that gave up: %v", err)
	}
}
