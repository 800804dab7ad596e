package orderwriter

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is capped exponential backoff with full jitter: retries of many
// replicas against a recovering MySQL spread out instead of arriving together,
// and a long outage costs one attempt per MaxBackoff, never a spin.
type backoff struct {
	min, max time.Duration
	n        int
}

// next returns the delay before the next attempt.
func (b *backoff) next() time.Duration {
	d := b.min << min(b.n, 20)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.n++
	// Full jitter over [d/2, d]: never zero, so never a spin.
	return d/2 + rand.N(d/2+1)
}

func (b *backoff) reset() { b.n = 0 }

// sleep waits d or until ctx is done; it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
