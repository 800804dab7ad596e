package admission

import (
	"runtime"
	"strings"
	"sync/atomic"
	"time"
)

// stepClock is the Service's clock in tests that end a bucket wait by
// moving time on instead of waiting it out: the host's clock plus an offset
// the test steps, so the deadlines of Redis calls derived from it stay real.
type stepClock struct{ off atomic.Int64 }

func (c *stepClock) now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

func (c *stepClock) step(d time.Duration) { c.off.Add(int64(d)) }

// goroutinesIn counts the goroutines whose stack holds both fn and caller
// (a test's function literal): how many of a test's goroutines are blocked
// in fn, for a test that must act only once they all got there.
func goroutinesIn(fn, caller string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	c := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) && strings.Contains(g, caller) {
			c++
		}
	}
	return c
}
