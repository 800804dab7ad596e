package queue_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/queue"
)

// TestPingBoundedBySilentBroker: a broker that accepts the connection and
// never answers (SIGSTOPped) must cost a probe its deadline, not forever, and
// leave neither a goroutine nor a socket behind.
func TestPingBoundedBySilentBroker(t *testing.T) {
	broker := testenv.Silent(t)
	before := runtime.NumGoroutine()
	const probes = 10
	for i := range probes {
		var ctx context.Context
		var cancel context.CancelFunc
		if i%2 == 0 {
			ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
		} else { // a cancelled probe without a deadline must end too
			ctx, cancel = context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
		}
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- queue.Ping(ctx, []string{broker.Addr}) }()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("probe %d: Ping of a silent broker succeeded", i)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("probe %d: Ping returned after %v, want about 200ms", i, d)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("probe %d: Ping still blocked 3s after its 200ms bound (%d sockets open)", i, broker.Open())
		}
		cancel()
	}
	deadline := time.Now().Add(3 * time.Second)
	for broker.Open() > 0 || runtime.NumGoroutine() > before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("after %d probes: %d sockets still open, goroutines %d -> %d", probes, broker.Open(), before, runtime.NumGoroutine())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
