package admission

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/pkg/bucketview"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// bucketViews shares one read of a bucketed item's buckets among every
// buyer of this process who waits for stock (awaitStock). At the end of a
// sale thousands of buyers can find their home bucket empty at once; each
// reading every bucket and re-running the admission script every poll
// would put hundreds of thousands of calls a second on Redis. Instead one
// snapshot per item is read at most once per poll period (later waiters get
// the fresh one, concurrent ones share the read in flight), and a waiter
// runs the script again only when the snapshot shows its home bucket has
// the qty.
type bucketViews struct {
	st     *bucketview.Store
	maxAge time.Duration
	sf     singleflight.Group
	mu     sync.Mutex
	m      map[int64]bucketView
}

type bucketView struct {
	snap bucketview.Snapshot
	at   time.Time
}

func newBucketViews(st *stock.Store, maxAge time.Duration) *bucketViews {
	return &bucketViews{st: bucketview.NewStore(st), maxAge: maxAge, m: map[int64]bucketView{}}
}

// get returns a snapshot of item's n buckets read at most maxAge ago, or
// read now (once, for all concurrent callers) when the last is older.
func (v *bucketViews) get(ctx context.Context, item int64, n int, timeout time.Duration) (bucketview.Snapshot, error) {
	v.mu.Lock()
	cur, ok := v.m[item]
	v.mu.Unlock()
	if ok && len(cur.snap.Stocks) == n && time.Since(cur.at) < v.maxAge {
		return cur.snap, nil
	}
	// Keyed by the count too: callers that know the item by different
	// counts (a count changed between sales, one ingress's cache behind)
	// must not share a read of the other count's buckets.
	res, err, _ := v.sf.Do(strconv.FormatInt(item, 10)+"/"+strconv.Itoa(n), func() (any, error) {
		// Not the caller's context: the read is shared, and one caller
		// leaving must not fail the others.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		snap, err := v.st.Snapshot(rctx, item, n)
		if err != nil {
			return nil, err
		}
		v.mu.Lock()
		v.m[item] = bucketView{snap: snap, at: time.Now()}
		v.mu.Unlock()
		return snap, nil
	})
	if err != nil {
		return bucketview.Snapshot{}, err
	}
	return res.(bucketview.Snapshot), nil
}
