package orderwriter

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// A broker that stops answering (every poll hangs) costs one goroutine, not
// one per tick: each poll gets a deadline of one interval, the next starts
// only after it returned, and the loop ends promptly on shutdown. The last
// good values outlive a failed poll or two, then, once the outage is older
// than lagStalePolls intervals, are dropped rather than shown frozen. The
// polls run on the real ticker (their deadline is what is tested); the age
// of the last good poll is judged by a clock the test moves.
func TestLagPollIsBoundedAndSerial(t *testing.T) {
	const interval = 40 * time.Millisecond
	m := NewMetrics(prometheus.NewRegistry())
	clk := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	var calls, inFlight, maxInFlight atomic.Int32
	var mu sync.Mutex
	var noDeadline, lateDeadline int
	w := &lagWatch{interval: interval, m: m, log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: clk.Now,
		poll: func(ctx context.Context) (map[int]int64, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				old := maxInFlight.Load()
				if n <= old || maxInFlight.CompareAndSwap(old, n) {
					break
				}
			}
			dl, ok := ctx.Deadline()
			mu.Lock()
			if !ok {
				noDeadline++
			} else if time.Until(dl) > interval {
				lateDeadline++
			}
			mu.Unlock()
			if calls.Add(1) == 1 {
				return map[int]int64{0: 7, 1: 3}, nil
			}
			<-ctx.Done() // a stalled broker: only the deadline ends the call
			return nil, ctx.Err()
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()

	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() bool { return testutil.CollectAndCount(m.GroupLag) == 2 },
		"the first poll's two partitions never exported")
	if v := testutil.ToFloat64(m.GroupLag.WithLabelValues("0")); v != 7 {
		t.Fatalf("group lag of partition 0 = %v after the first poll, want 7", v)
	}
	// Hung polls end by their deadline and the loop goes on polling; while
	// the last good poll is recent the series stay.
	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() bool { return testutil.ToFloat64(m.LagPollFailures) >= 2 },
		"no two timed-out polls counted: a hung poll blocked the loop (%d polls)", calls.Load())
	if n := testutil.CollectAndCount(m.GroupLag); n != 2 {
		t.Fatalf("%d group lag series after 2 failed polls within %d intervals of the last good one, want 2", n, lagStalePolls)
	}
	clk.Step((lagStalePolls + 1) * interval)
	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() bool { return testutil.CollectAndCount(m.GroupLag) == 0 },
		"group lag series still exported %d intervals after the last good poll (%d polls)", lagStalePolls+1, calls.Load())
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a hang guard: the poll in flight ends with ctx
		t.Fatal("lag watch did not stop on shutdown")
	}
	if got := maxInFlight.Load(); got != 1 {
		t.Fatalf("%d polls in flight at once, want 1", got)
	}
	if noDeadline > 0 || lateDeadline > 0 {
		t.Fatalf("%d polls without a deadline, %d with one beyond the interval", noDeadline, lateDeadline)
	}
	if c := calls.Load(); c < 3 {
		t.Fatalf("only %d polls: a hung poll blocked the loop", c)
	}
}

// A partition missing from a successful poll loses its series.
func TestLagPollDropsVanishedPartitions(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	answers := []map[int]int64{{0: 1, 1: 2}, {0: 1}}
	w := &lagWatch{interval: time.Second, m: m, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		poll: func(context.Context) (map[int]int64, error) {
			a := answers[0]
			answers = answers[1:]
			return a, nil
		}}
	w.tick(context.Background())
	if n := testutil.CollectAndCount(m.GroupLag); n != 2 {
		t.Fatalf("%d series, want 2", n)
	}
	w.tick(context.Background())
	if n := testutil.CollectAndCount(m.GroupLag); n != 1 {
		t.Fatalf("%d series after partition 1 vanished, want 1", n)
	}
}

// The per-fetch gauge forgets a partition this member stopped fetching (it
// moved to another member in a rebalance) and keeps the ones it fetches.
func TestFetchLagForgetsPartitionsNoLongerFetched(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	clk := testingclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	m.fetchLag.now = clk.Now
	m.fetchLag.set(0, 5)
	clk.Step(time.Millisecond)
	mid := clk.Now()
	clk.Step(time.Millisecond)
	m.fetchLag.set(1, 6)
	m.fetchLag.forgetIdle(mid.Add(-time.Hour))
	if n := testutil.CollectAndCount(m.fetchLag.vec); n != 2 {
		t.Fatalf("%d series, want 2 (both fetched recently)", n)
	}
	m.fetchLag.forgetIdle(mid)
	if n := testutil.CollectAndCount(m.fetchLag.vec); n != 1 {
		t.Fatalf("%d series, want 1", n)
	}
	if v := testutil.ToFloat64(m.fetchLag.vec.WithLabelValues("1")); v != 6 {
		t.Fatalf("partition 1 = %v, want 6", v)
	}
	m.fetchLag.set(0, 9) // fetched again: back
	if n := testutil.CollectAndCount(m.fetchLag.vec); n != 2 {
		t.Fatalf("%d series, want 2", n)
	}
}
