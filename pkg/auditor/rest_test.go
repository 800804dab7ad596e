package auditor

import (
	"testing"
	"time"
)

// TestRestAfter: a pass is followed by the rest of the interval, and never
// by less than four times its own length, so the auditor spends at most a
// fifth of its time reading the stores however large the sales grow.
func TestRestAfter(t *testing.T) {
	for _, c := range []struct{ interval, took, want time.Duration }{
		{2 * time.Second, 100 * time.Millisecond, 1900 * time.Millisecond},
		{2 * time.Second, 400 * time.Millisecond, 1600 * time.Millisecond},
		{2 * time.Second, time.Second, 4 * time.Second},
		{2 * time.Second, 3 * time.Second, 12 * time.Second},
		{15 * time.Second, 5 * time.Second, 20 * time.Second},
		{15 * time.Second, 0, 15 * time.Second},
	} {
		if got := restAfter(c.interval, c.took); got != c.want {
			t.Errorf("restAfter(%v, %v) = %v, want %v", c.interval, c.took, got, c.want)
		}
	}
}
