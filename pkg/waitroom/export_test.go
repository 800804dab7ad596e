package waitroom

import "time"

// SetClock makes g tell time by now, in its own checks of the items' sale
// windows and in its gate moves (Store.WithClock), so a test steps
// the gate's time and counts exact admissions instead of waiting on the
// wall clock. Called before g's first pass.
func SetClock(g *Gate, now func() time.Time) {
	g.now = now
	g.wr = g.wr.WithClock(now)
}
