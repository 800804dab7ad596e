package admission

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// bitmapOf sets the holder bits of users, as admit.lua's SETBIT does.
func bitmapOf(users ...int64) stock.HolderBitmap {
	b := make(stock.HolderBitmap, 1<<19)
	for _, u := range users {
		off := stock.HolderBit(u)
		b[off>>3] |= 0x80 >> (off & 7)
	}
	return b
}

func TestSoldOutFlag(t *testing.T) {
	c := newSoldOutCache(time.Second)
	now := time.Unix(1000, 0)
	if c.Hit(1, 7, false, now) {
		t.Fatal("hit before any mark")
	}
	if !c.NeedsMark(1, now) {
		t.Fatal("first sold-out answer must mark")
	}
	c.Mark(1, now, bitmapOf(7))
	for _, tc := range []struct {
		user  int64
		keyed bool
		want  bool
	}{
		{user: 8, keyed: false, want: true},
		// A holder's order without a key is answered 409 already_purchased
		// by Redis, naming the request that holds the item; 410 would tell
		// them "nothing reserved" (the contract's words) while they hold an
		// order, and a buyer who lost the 202 would never find it.
		{user: 7, keyed: false, want: false},
		{user: 8, keyed: true, want: true},  // bit clear: never held the item
		{user: 7, keyed: true, want: false}, // a holder's keyed request may be a replay of a 202
	} {
		if got := c.Hit(1, tc.user, tc.keyed, now.Add(500*time.Millisecond)); got != tc.want {
			t.Errorf("user %d keyed %v: hit %v, want %v", tc.user, tc.keyed, got, tc.want)
		}
	}
	if c.Hit(1, 8, false, now.Add(time.Second)) {
		t.Fatal("flag outlived its TTL: stock can come back")
	}
	// Without a snapshot, keyed requests always go to Redis; unkeyed ones
	// are answered from memory (no way to tell a holder).
	c.Mark(2, now, nil)
	if c.Hit(2, 8, true, now) || !c.Hit(2, 8, false, now) {
		t.Fatal("no snapshot: keyed must miss, unkeyed must hit")
	}
	c.Forget(2)
	if c.Hit(2, 8, false, now) {
		t.Fatal("forgotten flag still hits")
	}
	// An empty bitmap (nobody ever held the item) answers every keyed request.
	c.Mark(3, now, stock.HolderBitmap{})
	if !c.Hit(3, 8, true, now) {
		t.Fatal("empty bitmap: keyed requests of non-holders must hit")
	}
}

// A burst of sold-out answers reads the bitmap once, not once per request.
func TestSoldOutFlagMarksOnce(t *testing.T) {
	c := newSoldOutCache(time.Second)
	now := time.Now()
	var marks atomic.Int32
	var wg, asked sync.WaitGroup
	asked.Add(64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			need := c.NeedsMark(3, now)
			asked.Done()
			if need {
				marks.Add(1)
				asked.Wait() // the read is in flight until every goroutine has asked
				c.Mark(3, now, nil)
			}
		}()
	}
	wg.Wait()
	if marks.Load() != 1 {
		t.Fatalf("%d goroutines read the snapshot, want 1", marks.Load())
	}
	if c.NeedsMark(3, now.Add(100*time.Millisecond)) {
		t.Fatal("a fresh flag was marked again")
	}
}

// The flag forgets items whose flag expired, so a long sale with many items
// cannot grow it without bound.
func TestSoldOutFlagBounded(t *testing.T) {
	c := newSoldOutCache(100 * time.Millisecond)
	now := time.Unix(1000, 0)
	for i := range int64(10_000) {
		at := now.Add(time.Duration(i) * time.Millisecond)
		if c.NeedsMark(i, at) {
			c.Mark(i, at, nil)
		}
	}
	if n := c.size(); n > 200 {
		t.Fatalf("%d entries kept for items flagged 1 ms apart over 10 s with a 100 ms TTL, want only the fresh ones", n)
	}
}

// The holder bitmap is read only for an item whose previous flag saw at
// least BitsWorthAt requests: a quiet item's flags only count, and answer
// nothing from memory (so a holder's unkeyed request still reaches Redis
// and is told 409); a busy item's flags keep the snapshot; a counting flag
// that turns busy ends at once.
func TestSoldOutFlagReadsBitsOnlyWhenBusy(t *testing.T) {
	c := newSoldOutCache(time.Second)
	now := time.Unix(1000, 0)
	period := func(keyed, unkeyed int) {
		for i := range keyed {
			c.Hit(1, int64(100+i), true, now.Add(time.Millisecond))
		}
		for i := range unkeyed {
			c.Hit(1, int64(100+i), false, now.Add(time.Millisecond))
		}
		now = now.Add(time.Second) // the flag expires
	}
	mark := func(want bool, why string) {
		t.Helper()
		if !c.NeedsMark(1, now) {
			t.Fatalf("%s: an expired flag must be marked again", why)
		}
		if got := c.WantsBits(1); got != want {
			t.Fatalf("%s: wants bits %v, want %v", why, got, want)
		}
		if want {
			c.Mark(1, now, bitmapOf(7))
		} else {
			c.MarkCounting(1, now)
		}
	}
	mark(false, "first sell-out (no history)")
	if c.Hit(1, 8, false, now.Add(time.Millisecond)) || c.Hit(1, 8, true, now.Add(time.Millisecond)) {
		t.Fatal("a counting flag answered from memory: a holder's unkeyed request would be told 410")
	}
	// It ends as soon as it has seen BitsWorthAt requests (2 above).
	for i := 2; i < BitsWorthAt; i++ {
		if c.NeedsMark(1, now.Add(time.Millisecond)) {
			t.Fatalf("flag ended after %d requests, want %d", i, BitsWorthAt)
		}
		c.Hit(1, int64(100+i), i%2 == 0, now.Add(time.Millisecond))
	}
	if !c.NeedsMark(1, now.Add(2*time.Millisecond)) || !c.WantsBits(1) {
		t.Fatal("a busy counting flag must be marked again at once, with the snapshot")
	}
	c.MarkCounting(1, now) // as if it were marked counting again: starts afresh
	period(BitsWorthAt/2-1, BitsWorthAt/2)
	mark(false, "a quiet flag (63 requests)")
	period(BitsWorthAt/2, BitsWorthAt/2)
	mark(true, "a busy flag")
	if !c.Hit(1, 8, true, now.Add(time.Millisecond)) || !c.Hit(1, 8, false, now.Add(time.Millisecond)) || c.Hit(1, 7, false, now.Add(time.Millisecond)) {
		t.Fatal("with the snapshot non-holders are answered from memory, the holder is not")
	}
	period(BitsWorthAt, 0)
	mark(true, "still busy with the snapshot: its answers count too")
	c.Forget(1)
	mark(false, "forgotten (stock came back): no history")
}
