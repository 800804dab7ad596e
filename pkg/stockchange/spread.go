package stockchange

// Spread lays a restock of delta units out over n buckets evenly, the
// lower buckets getting the remainder (as a re-bucketing lays out the
// remaining stock, store.rebucket): the rebalancer then moves units to the
// buckets whose buyers want them, as it does for any skew. A withdraw is
// not spread: it takes what each bucket holds, in bucket order.
func Spread(delta int64, n int) []int64 {
	n = max(n, 1)
	out := make([]int64, n)
	for b := range n {
		out[b] = delta / int64(n)
		if int64(b) < delta%int64(n) {
			out[b]++
		}
	}
	return out
}
