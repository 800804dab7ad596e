package rowcache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

var errNoRow = errors.New("no row")

// counted is a load of id's row ("row"; errNoRow for id 0) that counts its
// calls.
func counted(n *atomic.Int64, id int64) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		n.Add(1)
		if id == 0 {
			return "", errNoRow
		}
		return "row", nil
	}
}

// TestLoadCachesRowsAndMisses: a row and a miss each cost one load per TTL,
// and a forget costs the next caller a load at once.
func TestLoadCachesRowsAndMisses(t *testing.T) {
	c := New[string](time.Second, errNoRow)
	clk := testingclock.NewFakeClock(time.Now())
	c.SetClock(clk.Now)
	for _, id := range []int64{1, 0} {
		var n atomic.Int64
		for range 3 {
			v, err := c.Load(t.Context(), id, counted(&n, id))
			if id == 0 && !errors.Is(err, errNoRow) || id != 0 && (err != nil || v != "row") {
				t.Fatalf("id %d: %q, %v", id, v, err)
			}
		}
		if n.Load() != 1 {
			t.Fatalf("id %d: %d loads within a TTL, want 1", id, n.Load())
		}
		clk.Step(c.TTL())
		_, _ = c.Load(t.Context(), id, counted(&n, id))
		c.Forget(id)
		_, _ = c.Load(t.Context(), id, counted(&n, id))
		if n.Load() != 3 {
			t.Fatalf("id %d: %d loads after a TTL and a forget, want 3", id, n.Load())
		}
	}
}

// TestForgetOlder forgets only an entry asked for before the bound.
func TestForgetOlder(t *testing.T) {
	c := New[string](time.Second, errNoRow)
	clk := testingclock.NewFakeClock(time.Now())
	c.SetClock(clk.Now)
	var n atomic.Int64
	_, _ = c.Load(t.Context(), 1, counted(&n, 1))
	if c.ForgetOlder(1, clk.Now().Add(-time.Millisecond)) {
		t.Fatal("forgot an entry asked for after the bound")
	}
	clk.Step(10 * time.Millisecond)
	if !c.ForgetOlder(1, c.Now().Add(-5*time.Millisecond)) {
		t.Fatal("kept an entry asked for before the bound")
	}
}

// TestLoadSharedAndLeft: concurrent callers share one load, and a caller
// whose context ends first gets ErrLeft while the load fills the cache.
func TestLoadSharedAndLeft(t *testing.T) {
	c := New[string](time.Minute, errNoRow)
	release := make(chan struct{})
	var n atomic.Int64
	slow := func(context.Context) (string, error) { n.Add(1); <-release; return "row", nil }
	ctx, cancel := context.WithCancel(t.Context())
	left := make(chan error)
	go func() { _, err := c.Load(ctx, 1, slow); left <- err }()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if v, err := c.Load(t.Context(), 1, slow); err != nil || v != "row" {
				t.Errorf("shared load: %q, %v", v, err)
			}
		})
	}
	cancel()
	if err := <-left; !errors.Is(err, ErrLeft) {
		t.Fatalf("left caller: %v, want ErrLeft", err)
	}
	close(release)
	wg.Wait()
	if v, err := c.Load(t.Context(), 1, slow); err != nil || v != "row" || n.Load() != 1 {
		t.Fatalf("after the flight: %q, %v, %d loads, want 1", v, err, n.Load())
	}
}
