package httpapi

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// countingHook counts the commands and pipelines (each attempt) a client
// sends to Redis.
type countingHook struct{ n *atomic.Int64 }

func (h countingHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}

func (h countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// TestIPLimiterBoundWhenRedisStalls: with Redis SIGSTOPped (connections
// accepted, nothing answered) the per-IP check gives up by its own timeout
// and fails open: the client's timeout (the admission's store timeout) must
// never be what ends it, on a pooled connection or on one it has to dial.
// The client's timeout is made an hour here, so a check it bounded would
// hang: the test tells the two apart by whether the check returns at all,
// not by how fast. Once open, the breaker answers without asking Redis.
func TestIPLimiterBoundWhenRedisStalls(t *testing.T) {
	pr := testenv.StartPrivateRedis(t)
	const clientTimeout = time.Hour
	const bound = 200 * time.Millisecond // the limiter's own timeout
	// hang only guards against a hang: 50 times the limiter's timeout, and
	// nothing near the client's.
	const hang = 50 * bound
	warm := pr.Client(clientTimeout)
	ctx := context.Background()
	// Fill the pool while Redis answers, so the stalled calls reuse a
	// connection that is already past its handshake.
	if err := warm.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	pr.Pause()
	defer pr.Resume()
	cold := pr.Client(clientTimeout) // its first call dials the stalled server
	for name, rdb := range map[string]redis.UniversalClient{"pooled connection": warm, "new connection": cold} {
		sent := new(atomic.Int64)
		rdb.AddHook(countingHook{sent})
		l := &ipLimiter{rdb: rdb, perSec: 10, timeout: bound}
		allow := func() (bool, error) {
			type result struct {
				ok  bool
				err error
			}
			done := make(chan result, 1)
			go func() {
				ok, err := l.allow(ctx, "192.0.2.1", time.Now())
				done <- result{ok, err}
			}()
			select {
			case r := <-done:
				return r.ok, r.err
			case <-time.After(hang):
				t.Fatalf("%s: the check did not return within %v with Redis stalled: its own timeout (%v) did not bound it", name, hang, bound)
				return false, nil
			}
		}
		for i := range 3 {
			l.downUntil.Store(0) // each call asks Redis
			before := sent.Load()
			start := time.Now()
			ok, err := allow()
			t.Logf("%s, call %d: %v (%v)", name, i, time.Since(start).Round(time.Millisecond), err)
			if !ok || err == nil {
				t.Errorf("%s: allow = %v, %v; want fail open with the error", name, ok, err)
			}
			if sent.Load() == before {
				t.Errorf("%s, call %d: nothing sent to Redis with the breaker reset", name, i)
			}
		}
		// Once open, the breaker answers without asking Redis.
		before := sent.Load()
		if ok, err := allow(); !ok || err != nil {
			t.Errorf("%s: open breaker: %v %v, want allowed without an error", name, ok, err)
		}
		if n := sent.Load() - before; n != 0 {
			t.Errorf("%s: the open breaker sent %d commands to Redis, want none", name, n)
		}
	}
}
