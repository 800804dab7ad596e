package testenv

import "testing"

// TestFreeAddrNeverRepeats: many calls in a row, as a pipeline set-up
// makes, never hand out one port twice.
func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 2000 {
		a := FreeAddr(t)
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
	}
}
