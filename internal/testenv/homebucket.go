package testenv

import "github.com/flashsale-dev/flashsale/pkg/stock"

// UserIn returns the first user id from `from` on whose home bucket of an
// item of n buckets is b (stock.HomeBucket): a buyer a test sends to one
// bucket of a bucketed item.
func UserIn(b, n int, from int64) int64 {
	for u := from; ; u++ {
		if stock.HomeBucket(u, n) == b {
			return u
		}
	}
}
