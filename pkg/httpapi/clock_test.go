package httpapi

import (
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// newTestClock returns a clock a test moves by hand (Step), starting now, so
// a test about a TTL passes it by stepping the clock rather than by waiting
// it out on a loaded machine, and can count exactly what each period costs.
func newTestClock() *testingclock.FakeClock { return testingclock.NewFakeClock(time.Now()) }

// useCacheClock makes h's item cache tell time by c. Called before h
// serves anything (the field is read unlocked).
func (h *harness) useCacheClock(c *testingclock.FakeClock) {
	h.srv.items.SetClock(c.Now)
}
