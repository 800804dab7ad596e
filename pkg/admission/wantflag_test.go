package admission

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// bucketWaiter is an admission service on a private Redis whose buyers
// wait for their home bucket's stock (up to a minute, polled every 10 ms)
// until the test steps the clock past the wait, with an item warmed with
// one bucket per entry of stocks, three units a buyer.
func bucketWaiter(t *testing.T, stocks ...int64) (*Service, redis.UniversalClient, *stepClock, int64) {
	t.Helper()
	svc, rdb, st, _ := privateService(t, Config{SoldOutTTL: time.Minute, PublishTimeout: 5 * time.Second, IdempotencyTTL: time.Minute,
		StoreTimeout: 5 * time.Second, BucketWait: time.Minute, BucketPoll: 10 * time.Millisecond})
	clk := &stepClock{}
	svc.now = clk.now
	item := testenv.ItemID()
	now := time.Now()
	if err := st.Warm(context.Background(), stock.Snapshot{ItemID: item, BucketStock: stocks, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PerUserLimit: 3}); err != nil {
		t.Fatal(err)
	}
	return svc, rdb, clk, item
}

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
	svc, rdb, clk, item := bucketWaiter(t, 0, 1)
	ctx := context.Background()
	want := stock.BucketKeys(item, 0).Want
	done := make(chan Result, 1)
	go func() { done <- svc.Admit(ctx, Request{ItemID: item, UserID: testenv.UserIn(0, 2, 1), Qty: 1}) }()
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return rdb.Exists(ctx, want).Val() == 1 },
		"the refused buyer's script never raised bucket 0's want flag")
	// A transfer filled the bucket and cleared the flag; another waiter
	// took the unit.
	rdb.Del(ctx, want)
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return rdb.Exists(ctx, want).Val() == 1 },
		"bucket 0's want flag stayed down while its buyer waited (%s): the rebalancer is never asked", waitState(done))
	endWait(t, clk, done)
}

// waitState says, when a failure is reported, whether the buyer still
// waits or how it was answered (the answer is then lost to endWait, which
// is not reached).
type waitState chan Result

func (w waitState) String() string {
	select {
	case res := <-w:
		return "answered " + string(res.Outcome)
	default:
		return "still waiting"
	}
}

// endWait steps clk past the bucket wait and takes the waiting buyer's
// answer; the bound on it is a hang guard.
func endWait(t *testing.T, clk *stepClock, done <-chan Result) {
	t.Helper()
	clk.step(time.Hour)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the buyer still waits with its bucket wait stepped past")
	}
}

// TestSmallWaiterNotHiddenByBigWant: a want flag carries the qty asked, and
// the rebalancer gathers that much (rebalance.Plan). When a buyer of 3
// is refused in a bucket where a buyer of 1 waits, its script raises the
// flag to 3; if the item holds fewer than 3 the policy can never cover that
// need, and with every bucket holding stock wanting too (stocks [1,1,0],
// needs [3,3,3]) it plans nothing: the buyer of 1 got 503 stock_moving
// after the full wait while 2 units remained. The waiter's wake must bring
// the flag down to its own qty, so the flag names a buyer the item can
// serve.
func TestSmallWaiterNotHiddenByBigWant(t *testing.T) {
	svc, rdb, clk, item := bucketWaiter(t, 1, 1, 0)
	ctx := context.Background()
	want := stock.BucketKeys(item, 2).Want
	done := make(chan Result, 1)
	small := testenv.UserIn(2, 3, 1)
	go func() { done <- svc.Admit(ctx, Request{ItemID: item, UserID: small, Qty: 1}) }()
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return rdb.Get(ctx, want).Val() == "1" },
		"the waiting buyer of 1 never raised bucket 2's want flag to 1")
	// A buyer of 3 homed on the same bucket: refused (2 units in all), and
	// its script raised the flag to 3.
	if res := svc.Admit(ctx, Request{ItemID: item, UserID: testenv.UserIn(2, 3, small+1), Qty: 3}); res.Outcome != SoldOut {
		t.Fatalf("buyer of 3 with 2 units in all: %s, want sold out", res.Outcome)
	}
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return rdb.Get(ctx, want).Val() == "1" },
		"bucket 2's want flag stayed up while a buyer of 1 waited there (%s): the policy is asked for 3 of an item holding 2", waitState(done))
	endWait(t, clk, done)
}
