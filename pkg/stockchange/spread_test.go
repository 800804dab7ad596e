package stockchange

import (
	"slices"
	"testing"
)

func TestSpread(t *testing.T) {
	for _, c := range []struct {
		delta int64
		n     int
		want  []int64
	}{
		{500, 1, []int64{500}},
		{500, 0, []int64{500}},
		{10, 4, []int64{3, 3, 2, 2}},
		{2, 4, []int64{1, 1, 0, 0}},
		{8, 4, []int64{2, 2, 2, 2}},
	} {
		got := Spread(c.delta, c.n)
		if !slices.Equal(got, c.want) {
			t.Errorf("Spread(%d, %d) = %v, want %v", c.delta, c.n, got, c.want)
		}
		var sum int64
		for _, v := range got {
			sum += v
		}
		if sum != c.delta {
			t.Errorf("Spread(%d, %d) sums to %d", c.delta, c.n, sum)
		}
	}
}
