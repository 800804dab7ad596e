package main

import (
	"math"
	"testing"
)

// TestPublishFromHistograms: two scrapes give the run's own publishes, and
// the percentiles are interpolated within their bucket as
// histogram_quantile does.
func TestPublishFromHistograms(t *testing.T) {
	bounds := []float64{.001, .002, .005}
	before := histogram{count: 50, sum: 0.05, bounds: bounds, cum: []uint64{50, 50, 50}}
	// 100 new publishes: 40 up to 1 ms, 50 in (1, 2] ms, 9 in (2, 5] ms, 1 beyond.
	after := histogram{count: 150, sum: 0.05 + 0.2, bounds: bounds, cum: []uint64{90, 140, 149}}
	st, err := after.since(before)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// p50: rank 50 is the 10th of 50 in (1, 2] ms: 1 + 10/50 ms.
	// p99: rank 99 is the 9th of 9 in (2, 5] ms: 5 ms.
	if st.Count != 100 || !near(st.P50ms, 1.2) || !near(st.P99ms, 5) || !near(st.Meanms, 2) {
		t.Errorf("got %+v, want 100 publishes, p50 1.2 ms, p99 5 ms, mean 2 ms", st)
	}
	if _, err := before.since(before); err == nil {
		t.Error("no publishes gave a figure")
	}
	if _, err := before.since(after); err == nil {
		t.Error("a counter that went back (restarted ingress) gave a figure")
	}
}
