package admission

import (
	"sync/atomic"
	"time"
)

// stepClock is the Service's clock in tests that end a bucket wait by
// moving time on instead of waiting it out: the host's clock plus an offset
// the test steps, so the deadlines of Redis calls derived from it stay real.
type stepClock struct{ off atomic.Int64 }

func (c *stepClock) now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

func (c *stepClock) step(d time.Duration) { c.off.Add(int64(d)) }
