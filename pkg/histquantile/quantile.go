package histquantile

// Count is a bucket count: uint64 as Prometheus' exposition gives it,
// int64 as JSON decodes it.
type Count interface{ ~int64 | ~uint64 }

// FromBuckets returns the q-quantile (0 < q < 1) of total observations
// whose cumulative counts at the upper bounds bounds (ascending, finite)
// are cum: the bucket where rank q*total falls, interpolated linearly
// inside it (the first bucket starts at 0). When the rank falls above the
// highest bound, v is that bound (histogram_quantile's answer) and above is
// true: the real value is somewhere beyond it, which a reader should be
// told. ok is false when there is nothing to estimate from (total 0, or no
// bounds).
func FromBuckets[T Count](q float64, bounds []float64, cum []T, total T) (v float64, above, ok bool) {
	if total == 0 || len(bounds) == 0 || len(cum) < len(bounds) {
		return 0, false, false
	}
	rank := q * float64(total)
	lower, below := 0.0, T(0)
	for i, ub := range bounds {
		if float64(cum[i]) >= rank {
			in := cum[i] - below
			if in == 0 {
				return ub, false, true
			}
			return lower + (ub-lower)*(rank-float64(below))/float64(in), false, true
		}
		lower, below = ub, cum[i]
	}
	return bounds[len(bounds)-1], true, true
}
