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
	sf         singleflight.Group
	mu         sync.Mutex
	m          map[int64]bucketCount
	refreshing map[int64]bool // a background read is under way
}

type bucketCount struct {
	n  int
	at time.Time
}

// bucketCountTTL is how long a read count is trusted before it is read
// again: one small HMGET per item per second per ingress replica.
const bucketCountTTL = time.Second

func newBucketCounts() *bucketCounts {
	return &bucketCounts{ttl: bucketCountTTL, m: map[int64]bucketCount{}, refreshing: map[int64]bool{}}
}

// get returns item's bucket count. A count read within the TTL is used as
// it is; an older one is used too while a fresh one is read in the
// background (one read per item at a time), so neither a slow nor a lost
// bucket 0 shard holds up admissions in the other buckets: a stale count is
// safe, since the script answers Moved to it. Only an item never read
// before waits for the read (and refresh forces one, after Moved).
func (c *bucketCounts) get(ctx context.Context, st *stock.Store, item int64, now time.Time, refresh bool, timeout time.Duration) (int, error) {
	c.mu.Lock()
	v, ok := c.m[item]
	stale := ok && !refresh && now.Sub(v.at) >= c.ttl && !c.refreshing[item]
	if stale {
		c.refreshing[item] = true
	}
	c.mu.Unlock()
	if stale {
		go func() {
			_, _ = c.read(context.WithoutCancel(ctx), st, item, timeout)
			c.mu.Lock()
			delete(c.refreshing, item)
			c.mu.Unlock()
		}()
	}
	if ok && !refresh {
		return v.n, nil
	}
	return c.read(ctx, st, item, timeout)
}

// read reads item's count once for every concurrent caller and caches it.
func (c *bucketCounts) read(ctx context.Context, st *stock.Store, item int64, timeout time.Duration) (int, error) {
	got, err, _ := c.sf.Do(strconv.FormatInt(item, 10), func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		n, warmed, err := st.Buckets(rctx, item)
		if err != nil {
			return 0, err
		}
		if !warmed {
			n = 1
		}
		c.mu.Lock()
		c.m[item] = bucketCount{n: n, at: time.Now()}
		c.mu.Unlock()
		return n, nil
	})
	if err != nil {
		return 0, err
	}
	return got.(int), nil
}
