package admission

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/bucketview"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestBucketViewsKeepCountsApart: two callers reading one item with
// different bucket counts (an ingress whose item cache still has the old
// count while another has the new one) must each get a snapshot of the
// count they asked for. The shared read was keyed by the item alone, so a
// caller of 8 buckets joining a read of 4 got 4 stocks and indexed its home
// bucket past them: a panic, answered 500.
func TestBucketViewsKeepCountsApart(t *testing.T) {
	r := testenv.StartPrivateRedis(t)
	v := newBucketViews(stock.New(r.Client(5*time.Second)), time.Minute)
	item := testenv.ItemID()
	// Both callers are inside the shared read (the singleflight) at once:
	// the first's read is held in flight by the paused server, and the
	// second joins it or reads on its own; only then may it end.
	const test, inRead = "admission.TestBucketViewsKeepCountsApart", "singleflight.(*Group).Do("
	r.Pause() // holds the first read in flight
	first := make(chan bucketview.Snapshot, 1)
	go func() {
		snap, _ := v.get(context.Background(), item, 4, 5*time.Second)
		first <- snap
	}()
	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() bool { return testenv.GoroutinesIn(inRead, test) == 1 },
		"the caller of 4 buckets never started its read")
	second := make(chan bucketview.Snapshot, 1)
	go func() {
		snap, _ := v.get(context.Background(), item, 8, 5*time.Second)
		second <- snap
	}()
	testenv.Eventually(t, 10*time.Second, time.Millisecond, func() bool { return testenv.GoroutinesIn(inRead, test) == 2 },
		"the caller of 8 buckets never reached the read while the read of 4 was in flight")
	r.Resume()
	if got := len((<-first).Stocks); got != 4 {
		t.Fatalf("the caller of 4 buckets got %d stocks", got)
	}
	if got := len((<-second).Stocks); got != 8 {
		t.Fatalf("the caller of 8 buckets got %d stocks, want 8 (it shared the read of 4)", got)
	}
}
