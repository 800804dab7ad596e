package testenv

import (
	"testing"
	"time"
)

// TestEventuallyReturnsOnceTheConditionHolds: the poll ends at the ask
// where cond first holds, and asks no more after it.
func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	asked := 0
	Eventually(t, time.Minute, time.Millisecond, func() bool { asked++; return asked >= 3 }, "the third ask")
	if asked != 3 {
		t.Fatalf("asked %d times, want 3", asked)
	}
}

// fatalRecorder records Fatalf instead of ending the test, so the failure
// path of Eventually can be checked.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper()               {}
func (f *fatalRecorder) Fatalf(string, ...any) { f.failed = true }

// TestEventuallyFailsAtTheDeadline: a condition that never holds fails the
// test once the timeout has passed.
func TestEventuallyFailsAtTheDeadline(t *testing.T) {
	f := &fatalRecorder{TB: t}
	Eventually(f, 20*time.Millisecond, time.Millisecond, func() bool { return false }, "never")
	if !f.failed {
		t.Fatal("a condition that never held did not fail the test")
	}
}
