package testenv

import "testing"

// NeedStack skips the test under -short (make test-unit): it needs the live
// stack, or a server binary of it, which the unit tier neither has nor
// starts. Every helper here that reaches a server calls it first, so a test
// that takes its servers from testenv skips with one line saying why, and a
// test that needs none runs. Without -short nothing skips: a missing server
// fails the test (make test starts the stack).
func NeedStack(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs the live stack (%s): skipped under -short; `make test` runs it", what)
	}
}
