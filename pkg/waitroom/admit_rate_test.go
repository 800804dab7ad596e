package waitroom

import (
	"math"
	"testing"
	"time"
)

// gateRun feeds m reads every 100 ms from at for d, the gate moving perSec
// a second in passes of 100 ms (as gate_advance.lua does: whole tickets,
// the fraction carried), starting from serving; free is whether the gate
// could move on at each read. It returns the time and serving position of
// the last read.
func gateRun(m *admitRate, at time.Time, serving int64, d time.Duration, perSec float64, free bool) (time.Time, int64) {
	carry := 0.0
	for t := time.Duration(0); t < d; t += 100 * time.Millisecond {
		at = at.Add(100 * time.Millisecond)
		carry += perSec / 10
		n := math.Floor(carry)
		carry -= n
		serving += int64(n)
		m.observe(at, serving, free)
	}
	return at, serving
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

// TestAdmitRateLearnsTheGatesRate: the estimate's rate is the one the
// gate is seen admitting at over the last seconds, the configured
// queue_rate until a second of the gate moving has been seen, never more
// than the configured one and never less than a tenth of it.
func TestAdmitRateLearnsTheGatesRate(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	cases := []struct {
		name string
		run  func(m *admitRate) time.Time
		want float64 // with queue_rate 200
		tol  float64
	}{
		{"nothing seen: the configured rate", func(m *admitRate) time.Time { return t0 }, 200, 0},
		{"half a second of the gate moving: not enough, the configured rate", func(m *admitRate) time.Time {
			at, _ := gateRun(m, t0, 0, 500*time.Millisecond, 100, true)
			return at
		}, 200, 0},
		{"a gate held back to half its rate (in-flight limit): half", func(m *admitRate) time.Time {
			at, _ := gateRun(m, t0, 0, 5*time.Second, 100, true)
			return at
		}, 100, .04},
		{"a gate at its rate: the rate", func(m *admitRate) time.Time {
			at, _ := gateRun(m, t0, 0, 5*time.Second, 200, true)
			return at
		}, 200, .04},
		{"a second of credit spent at once after a gap: never above the configured rate", func(m *admitRate) time.Time {
			at, s := gateRun(m, t0, 0, 2*time.Second, 200, true)
			at, s = at.Add(100*time.Millisecond), s+200
			m.observe(at, s, true)
			at, _ = gateRun(m, at, s, time.Second, 200, true)
			return at
		}, 200, 0},
		{"before the first round closes the gate stands: not a rate of 0", func(m *admitRate) time.Time {
			at, s := gateRun(m, t0, 0, 10*time.Second, 0, false) // serving 0 at the closed rounds' bound 0
			at, _ = gateRun(m, at, s, 1500*time.Millisecond, 200, true)
			return at
		}, 200, .1},
		{"a gate that has not moved yet, its bound unknown: the configured rate", func(m *admitRate) time.Time {
			at, _ := gateRun(m, t0, 0, 10*time.Second, 0, true)
			return at
		}, 200, 0},
		{"every ticket admitted, or the closed rounds' end reached, a while: not counted", func(m *admitRate) time.Time {
			at, s := gateRun(m, t0, 0, 2*time.Second, 200, true)
			at, s = gateRun(m, at, s, 2*time.Second, 0, false)
			at, _ = gateRun(m, at, s, 1500*time.Millisecond, 200, true)
			return at
		}, 200, .04},
		{"a gate held for the whole window (the pipeline stalled): a tenth, not 0", func(m *admitRate) time.Time {
			at, s := gateRun(m, t0, 0, 2*time.Second, 200, true)
			at, _ = gateRun(m, at, s, 5*time.Second, 0, true)
			return at
		}, 20, 0},
		{"one read that came 400 ms late: hardly moves it", func(m *admitRate) time.Time {
			at, s := gateRun(m, t0, 0, 3*time.Second, 200, true)
			at, s = at.Add(400*time.Millisecond), s+80
			m.observe(at, s, true)
			at, _ = gateRun(m, at, s, 300*time.Millisecond, 200, true)
			return at
		}, 200, .04},
		{"one interval the gate held: a thirtieth less at most", func(m *admitRate) time.Time {
			at, s := gateRun(m, t0, 0, 3*time.Second, 200, true)
			at, s = gateRun(m, at, s, 100*time.Millisecond, 0, true)
			at, _ = gateRun(m, at, s, 500*time.Millisecond, 200, true)
			return at
		}, 200, .05},
		{"nothing seen for longer than the window: the configured rate again", func(m *admitRate) time.Time {
			at, _ := gateRun(m, t0, 0, 3*time.Second, 50, true)
			return at.Add(rateWindow + time.Second)
		}, 200, 0},
		{"the gate's state gone (the item warmed again): the old reads are not a rate", func(m *admitRate) time.Time {
			at, _ := gateRun(m, t0, 1000, 3*time.Second, 50, true)
			at, _ = gateRun(m, at, 0, 500*time.Millisecond, 200, true)
			return at
		}, 200, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m admitRate
			at := c.run(&m)
			if got := m.rate(at, 200); !near(got, c.want, c.tol) {
				t.Errorf("rate %.1f a second, want %.1f (±%.0f%%)", got, c.want, 100*c.tol)
			}
		})
	}
}

// TestGateFree: the gate can move on from serving while it is short of
// the tickets taken and of the closed rounds' end (when known): the
// position it stands at otherwise is no measure of its rate.
func TestGateFree(t *testing.T) {
	for _, c := range []struct {
		serving, tickets, bound int64
		boundOK, want           bool
	}{
		{0, 100, 0, true, false},   // no round closed yet
		{0, 100, 0, false, true},   // nothing known of the rounds: the first move tells
		{40, 100, 40, true, false}, // at the closed rounds' end, the next round open
		{41, 100, 40, true, true},  // past a bound read before the next close: that bound is old
		{39, 100, 40, true, true},
		{100, 100, 0, false, false}, // every ticket admitted
	} {
		if got := gateFree(c.serving, c.tickets, c.bound, c.boundOK); got != c.want {
			t.Errorf("gateFree(serving %d, tickets %d, bound %d %v) = %v, want %v", c.serving, c.tickets, c.bound, c.boundOK, got, c.want)
		}
	}
}
