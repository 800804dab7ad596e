package httpapi

import (
	"sync"
	"time"
)

// testClock is a clock a test moves by hand, so a test about a TTL passes
// it by advancing the clock rather than by waiting it out on a loaded
// machine, and can count exactly what each period costs.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Now()} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// useCacheClock makes h's item cache tell time by c. Called before h
// serves anything (the field is read unlocked).
func (h *harness) useCacheClock(c *testClock) {
	h.srv.items.SetClock(c.now)
}
