package admission

import (
	"testing"
	"time"
)

func TestSoldOutFlag(t *testing.T) {
	c := newSoldOutCache(time.Second)
	now := time.Unix(1000, 0)
	if c.Hit(1, now) {
		t.Fatal("hit before any mark")
	}
	c.Mark(1, now)
	if !c.Hit(1, now.Add(500*time.Millisecond)) {
		t.Fatal("fresh flag does not hit")
	}
	// A later verdict does not extend a fresh flag.
	c.Mark(1, now.Add(900*time.Millisecond))
	if c.Hit(1, now.Add(time.Second)) {
		t.Fatal("flag outlived its TTL: stock can come back")
	}
	c.Mark(2, now)
	c.Forget(2)
	if c.Hit(2, now) {
		t.Fatal("forgotten flag still hits")
	}
	if off := newSoldOutCache(0); func() bool { off.Mark(3, now); return off.Hit(3, now) }() {
		t.Fatal("TTL 0 switches the flag off")
	}
}

// The flag keeps no per-buyer state and forgets items whose flag expired, so
// a long sale with many items cannot grow it without bound.
func TestSoldOutFlagBounded(t *testing.T) {
	c := newSoldOutCache(100 * time.Millisecond)
	now := time.Unix(1000, 0)
	for i := range int64(10_000) {
		c.Mark(i, now.Add(time.Duration(i)*time.Millisecond))
	}
	if n := c.size(); n > 200 {
		t.Fatalf("%d entries kept for items flagged at most 100 ms apart over 10 s, want only the fresh ones", n)
	}
}
