package histquantile

import (
	"math"
	"testing"
)

func TestFromBuckets(t *testing.T) {
	bounds := []float64{.001, .002, .005}
	// 100 observations: 40 up to 1 ms, 50 in (1, 2] ms, 9 in (2, 5] ms, 1 beyond.
	cum := []uint64{40, 90, 99}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	for _, c := range []struct {
		q     float64
		want  float64
		above bool
	}{
		{0.2, 0.0005, false}, // rank 20 of 40 in (0, 1] ms
		{0.5, 0.0012, false}, // rank 50: the 10th of 50 in (1, 2] ms
		{0.99, 0.005, false}, // rank 99: the 9th of 9 in (2, 5] ms
		{0.999, 0.005, true}, // rank 99.9: beyond the last bound
		{0.4, 0.001, false},  // rank 40: the top of the first bucket
		{0.95, 0.002 + 0.003*5/9, false},
	} {
		v, above, ok := FromBuckets(c.q, bounds, cum, 100)
		if !ok || !near(v, c.want) || above != c.above {
			t.Errorf("q %v = %v above %v ok %v, want %v above %v", c.q, v, above, ok, c.want, c.above)
		}
	}
	// An empty bucket at the rank answers its bound (no division by zero).
	if v, _, ok := FromBuckets(0.5, []float64{1, 2}, []int64{0, 0}, int64(0)); ok {
		t.Errorf("no observations gave %v", v)
	}
	if v, above, ok := FromBuckets(0.5, []float64{1, 2, 3}, []int64{0, 10, 10}, 10); !ok || above || !near(v, 1.5) {
		t.Errorf("rank 5 of 10 in (1, 2] = %v %v %v, want 1.5", v, above, ok)
	}
	if _, _, ok := FromBuckets(0.5, nil, []int64{}, 5); ok {
		t.Error("no bounds gave a figure")
	}
}
