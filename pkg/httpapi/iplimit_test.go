package httpapi

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestIPLimiterBoundWhenRedisStalls: with Redis SIGSTOPped (connections
// accepted, nothing answered) the per-IP check gives up within its own
// bound, a quarter of the store timeout, and fails open: it must never cost
// a request the whole store timeout (the admission's), on a pooled
// connection or on one it has to dial.
func TestIPLimiterBoundWhenRedisStalls(t *testing.T) {
	pr := testenv.StartPrivateRedis(t)
	const storeTimeout = 800 * time.Millisecond
	const bound = storeTimeout / 4
	const slack = 100 * time.Millisecond
	warm := pr.Client(storeTimeout)
	ctx := context.Background()
	// Fill the pool while Redis answers, so the stalled calls reuse a
	// connection that is already past its handshake.
	if err := warm.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	pr.Pause()
	defer pr.Resume()
	cold := pr.Client(storeTimeout) // its first call dials the stalled server
	for name, l := range map[string]*ipLimiter{
		"pooled connection": {rdb: warm, perSec: 10, timeout: bound},
		"new connection":    {rdb: cold, perSec: 10, timeout: bound},
	} {
		for i := range 3 {
			l.downUntil.Store(0) // each call asks Redis
			start := time.Now()
			ok, err := l.allow(ctx, "192.0.2.1", time.Now())
			d := time.Since(start)
			t.Logf("%s, call %d: %v (%v)", name, i, d.Round(time.Millisecond), err)
			if !ok || err == nil {
				t.Errorf("%s: allow = %v, %v; want fail open with the error", name, ok, err)
			}
			if d > bound+slack {
				t.Errorf("%s: the check took %v with Redis stalled; its bound is %v", name, d.Round(time.Millisecond), bound)
			}
		}
		// Once open, the breaker answers without asking Redis.
		start := time.Now()
		if ok, err := l.allow(ctx, "192.0.2.1", time.Now()); !ok || err != nil || time.Since(start) > 10*time.Millisecond {
			t.Errorf("%s: open breaker: %v %v after %v", name, ok, err, time.Since(start))
		}
	}
}
