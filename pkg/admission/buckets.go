package admission

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// bucketCounts caches each item's bucket count, which the ingress needs
// before the admission script runs: the buyer's home bucket
// (stock.HomeBucket) names the script's keys, and so its Redis slot. A
// count changes only between sales (a warm), and a stale one costs one
// retry, not a wrong answer: every bucket's meta carries the count and
// admit.lua answers Moved to any other.
type bucketCounts struct {
	ttl time.Duration
	// sf makes the buyers who find the count stale at the same moment (the
	// first instant of a sale: all of them) share one read.
	sf singleflight.Group
	mu sync.Mutex
	m  map[int64]bucketCount
}

type bucketCount struct {
	n  int
	at time.Time
}

// bucketCountTTL is how long a read count is trusted before it is read
// again: one small HMGET per item per second per ingress replica.
const bucketCountTTL = time.Second

func newBucketCounts() *bucketCounts {
	return &bucketCounts{ttl: bucketCountTTL, m: map[int64]bucketCount{}}
}

// get returns item's bucket count, reading it from Redis when the cached
// one is older than the TTL or refresh is set. An item Redis does not know
// counts 1: the script then answers Unknown.
func (c *bucketCounts) get(ctx context.Context, st *stock.Store, item int64, now time.Time, refresh bool) (int, error) {
	c.mu.Lock()
	v, ok := c.m[item]
	c.mu.Unlock()
	if ok && !refresh && now.Sub(v.at) < c.ttl {
		return v.n, nil
	}
	got, err, _ := c.sf.Do(strconv.FormatInt(item, 10), func() (any, error) {
		n, warmed, err := st.Buckets(ctx, item)
		if err != nil {
			return 0, err
		}
		if !warmed {
			n = 1
		}
		c.mu.Lock()
		c.m[item] = bucketCount{n: n, at: now}
		c.mu.Unlock()
		return n, nil
	})
	if err != nil {
		return 0, err
	}
	return got.(int), nil
}
