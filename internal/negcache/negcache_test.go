package negcache

import (
	"testing"
	"time"
)

// TestBounded: random ids (an attacker's) never grow the cache past
// its bound, entries expire after the TTL, and forget drops one at once.
func TestBounded(t *testing.T) {
	c := New[int](time.Second, 100)
	now := time.Now()
	for i := range 10000 {
		c.Add(i, now.Add(time.Duration(i)*time.Microsecond))
		if n := c.Len(); n > 100 || len(c.fifo) > 100 {
			t.Fatalf("after %d adds: %d keys, %d queued, want at most 100", i+1, n, len(c.fifo))
		}
	}
	later := now.Add(10 * time.Millisecond)
	if !c.Has(9999, later) || c.Has(0, later) {
		t.Fatalf("want the newest kept and the oldest evicted")
	}
	if c.Has(9999, later.Add(time.Second)) {
		t.Fatalf("entry still there after its TTL")
	}
	c.Forget(9999)
	if c.Has(9999, later) {
		t.Fatalf("forgotten entry still there")
	}
	c.Add(5, later)
	c.Add(5, later.Add(500*time.Millisecond)) // re-added: the newer expiry holds
	if !c.Has(5, later.Add(1200*time.Millisecond)) {
		t.Fatalf("re-added entry expired with its first expiry")
	}
}
