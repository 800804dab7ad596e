package admission

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSoldOutFlag(t *testing.T) {
	c := newSoldOutCache(time.Second)
	now := time.Unix(1000, 0)
	if c.Hit(1, 7, false, now) {
		t.Fatal("hit before any mark")
	}
	if !c.NeedsMark(1, now) {
		t.Fatal("first sold-out answer must mark")
	}
	c.Mark(1, now, map[int64]struct{}{7: {}})
	for _, tc := range []struct {
		user  int64
		keyed bool
		want  bool
	}{
		{user: 8, keyed: false, want: true},
		{user: 7, keyed: false, want: true}, // no key: cannot be a replay
		{user: 8, keyed: true, want: true},  // not a buyer: never admitted
		{user: 7, keyed: true, want: false}, // a buyer's keyed request may be a replay of a 202
	} {
		if got := c.Hit(1, tc.user, tc.keyed, now.Add(500*time.Millisecond)); got != tc.want {
			t.Errorf("user %d keyed %v: hit %v, want %v", tc.user, tc.keyed, got, tc.want)
		}
	}
	if c.Hit(1, 8, false, now.Add(time.Second)) {
		t.Fatal("flag outlived its TTL: stock can come back")
	}
	// Without a snapshot, keyed requests always go to Redis.
	c.Mark(2, now, nil)
	if c.Hit(2, 8, true, now) || !c.Hit(2, 8, false, now) {
		t.Fatal("no snapshot: keyed must miss, unkeyed must hit")
	}
	c.Forget(2)
	if c.Hit(2, 8, false, now) {
		t.Fatal("forgotten flag still hits")
	}
}

// A burst of sold-out answers reads the buyer set once, not once per request.
func TestSoldOutFlagMarksOnce(t *testing.T) {
	c := newSoldOutCache(time.Second)
	now := time.Now()
	var marks atomic.Int32
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.NeedsMark(3, now) {
				marks.Add(1)
				time.Sleep(5 * time.Millisecond)
				c.Mark(3, now, nil)
			}
		}()
	}
	wg.Wait()
	if marks.Load() != 1 {
		t.Fatalf("%d goroutines read the buyers, want 1", marks.Load())
	}
	if c.NeedsMark(3, now.Add(100*time.Millisecond)) {
		t.Fatal("a fresh flag was marked again")
	}
}
