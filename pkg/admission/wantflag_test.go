package admission

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestWaitingBuyerKeepsItsBucketWanted: a buyer waiting for their home
// bucket's stock keeps its want flag up while they wait. transfer_in.lua
// clears the flag when a transfer fills the bucket to the qty asked; when
// another waiter of the bucket then takes the unit, the one left waiting
// never ran the script again (the shared view showed the bucket empty), so
// nothing asked the rebalancer for that bucket and the buyer got 503
// stock_moving after the full wait while a unit sat in another bucket (1
// round in 8 of TestBucketedPaymentWindowServesAtOnce, the last transfer
// 0.6 s before the 503).
func TestWaitingBuyerKeepsItsBucketWanted(t *testing.T) {
	r := testenv.StartPrivateRedis(t)
	rdb := r.Client(5 * time.Second)
	st := stock.New(rdb)
	var pub countingPublisher
	svc := New(Config{SoldOutTTL: time.Minute, PublishTimeout: 5 * time.Second, IdempotencyTTL: time.Minute,
		StoreTimeout: 5 * time.Second, BucketWait: 800 * time.Millisecond, BucketPoll: 10 * time.Millisecond}, Deps{Stock: st, DB: nil, Publisher: &pub}, NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	item := testenv.ItemID()
	now := time.Now()
	if err := st.Warm(ctx, stock.Snapshot{ItemID: item, BucketStock: []int64{0, 1}, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PerUserLimit: 3}); err != nil {
		t.Fatal(err)
	}
	want := stock.BucketKeys(item, 0).Want
	done := make(chan Result, 1)
	go func() { done <- svc.Admit(ctx, Request{ItemID: item, UserID: userHomedOn(0, 2, 1), Qty: 1}) }()
	testenv.Eventually(t, 2*time.Second, 5*time.Millisecond, func() bool { return rdb.Exists(ctx, want).Val() == 1 },
		"the refused buyer's script never raised bucket 0's want flag")
	// A transfer filled the bucket and cleared the flag; another waiter
	// took the unit.
	rdb.Del(ctx, want)
	raised := false
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if rdb.Exists(ctx, want).Val() == 1 {
			raised = true
			break
		}
	}
	res := <-done
	if !raised {
		t.Fatalf("bucket 0's want flag stayed down for 500 ms while its buyer waited (answered %s): the rebalancer is never asked", res.Outcome)
	}
}
