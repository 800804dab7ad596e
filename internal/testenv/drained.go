package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// WaitDrained polls (every 100 ms, up to timeout) until group has no lag
// over topic: every message consumed and committed. It fails the test with
// msg otherwise.
func WaitDrained(t testing.TB, timeout time.Duration, brokers []string, group, topic, msg string) {
	t.Helper()
	Eventually(t, timeout, 100*time.Millisecond, func() bool {
		lag, err := orderlog.Lag(context.Background(), brokers, group, topic)
		if err != nil {
			return false
		}
		for _, l := range lag {
			if l != 0 {
				return false
			}
		}
		return true
	}, "%s (group %s, topic %s)", msg, group, topic)
}
