package orderlog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
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
		done := make(chan error, 1)
		go func() { done <- orderlog.Ping(ctx, []string{broker.Addr}) }()
		select {
		case err := <-done:
			// Ended by its context (the silent broker never answers): the
			// cancel, or the deadline, which the connection's read may
			// see an instant before the context does.
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("probe %d: Ping of a silent broker = %v, want its context's end or deadline", i, err)
			}
		case <-time.After(3 * time.Second): // a hang guard, 15 times the bound, not a speed bound
			t.Fatalf("probe %d: Ping still blocked 3s after its 200ms bound (%d sockets open)", i, broker.Open())
		}
		cancel()
	}
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
		return broker.Open() == 0 && runtime.NumGoroutine() <= before+2
	}, "after %d probes: sockets or goroutines left behind (%v)", probes, leftBehind{broker, before})
}

// leftBehind prints the open sockets and goroutines when a failure is
// reported.
type leftBehind struct {
	broker *testenv.SilentServer
	before int
}

func (l leftBehind) String() string {
	return fmt.Sprintf("%d sockets open, goroutines %d -> %d", l.broker.Open(), l.before, runtime.NumGoroutine())
}
