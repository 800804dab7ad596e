package admission

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestKeyedRequestsShareABucketWait: 20 concurrent requests with one
// Idempotency-Key, on a bucketed item whose buyer's home bucket is empty
// (a burst just took it) while other buckets hold stock. An unbucketed item
// answers all 20 with the first's 202: the first reserves and records the
// key before the others reach the rate limiter, so they replay. Here the
// first waits for the rebalancer, records nothing, and the other 19 went
// through the per-user limiter as new attempts: 5 x 202 and 15 x 429
// rate_limited. All 20 must get the same 202.
func TestKeyedRequestsShareABucketWait(t *testing.T) {
	svc, rdb, st, pub := privateService(t, Config{UserRateLimit: 5, SoldOutTTL: time.Minute, PublishTimeout: 5 * time.Second, IdempotencyTTL: time.Minute,
		StoreTimeout: 5 * time.Second, BucketWait: time.Minute, BucketPoll: 10 * time.Millisecond})
	ctx := context.Background()
	const n = 8
	item, user := testenv.ItemID(), testenv.UserIn(3, n, 1)
	stocks := []int64{5, 5, 5, 0, 5, 5, 5, 5}
	now := time.Now()
	if err := st.Warm(ctx, stock.Snapshot{ItemID: item, BucketStock: stocks, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PerUserLimit: 3}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	answers := map[Outcome]int{}
	rids := map[string]bool{}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			res := svc.Admit(ctx, Request{ItemID: item, UserID: user, Qty: 1, IdempotencyKey: "k-1"})
			mu.Lock()
			defer mu.Unlock()
			answers[res.Outcome]++
			if res.OK() {
				rids[res.RequestID] = true
			}
		})
	}
	// The rebalancer, late: a unit reaches bucket 3 once one request waits
	// for it and the other 19 have arrived meanwhile (the bucket wait,
	// a minute here, is only a hang guard). Without keyedFlights the 19
	// never wait for the first: they go through the limiter at once.
	const test = "admission.TestKeyedRequestsShareABucketWait"
	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() bool {
		return testenv.GoroutinesIn("admission.(*Service).awaitStock(", test) == 1 && testenv.GoroutinesIn("admission.(*keyedFlights).join(", test) == 19
	}, "not one request waiting for bucket 3 and 19 copies waiting for it")
	rdb.IncrBy(ctx, stock.BucketKeys(item, 3).Stock, 1)
	wg.Wait()
	if answers[Accepted]+answers[Replayed] != 20 || len(rids) != 1 {
		t.Fatalf("20 requests with one Idempotency-Key answered %v with %d request ids; want 20 x 202 of one request", answers, len(rids))
	}
	if got := pub.n.Load(); got != 1 {
		t.Fatalf("%d orders published; want 1", got)
	}
}
