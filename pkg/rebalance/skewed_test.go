package rebalance

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Skewed demand at the stock level: an item of 400 units in 8 buckets, and
// every buyer's home bucket is 0 or 1. 40 buyers at a time admit; one found
// short retries (same request id) every 10-25 ms until the ingress's check
// (e.soldOut) says every bucket is empty. With the rebalancer's loop running, exactly
// the 400 units are sold, each buyer once, every bucket ends empty in Redis
// and MySQL's rows moved with Redis.
func TestSkewedDemandSellsEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	const n, total, workers = 8, 400, 40
	const saleLimit = 60 * time.Second
	item := e.item(total, n)
	// Buyers whose home is bucket 0 or 1, each tried by one worker until
	// admitted.
	var users []int64
	for u := int64(1); len(users) < 2*total; u++ {
		if stock.HomeBucket(u, n) <= 1 {
			users = append(users, u)
		}
	}
	r := e.rebalancer(Config{Interval: 100 * time.Millisecond, PassTimeout: 5 * time.Second})
	rctx, stop := context.WithCancel(ctx)
	loopDone := make(chan error, 1)
	go func() { loopDone <- r.Run(rctx) }()

	var next, admitted, refusals atomic.Int64
	var mu sync.Mutex
	holders := map[int64]string{}
	fail := make(chan string, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for {
				i := next.Add(1) - 1
				if i >= int64(len(users)) {
					fail <- "ran out of buyers"
					return
				}
				u := users[i]
				b := stock.HomeBucket(u, n)
				rid := reqid.NewIn(item, b, time.Now())
				for {
					res, err := e.st.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: n, Bucket: b, UserID: u, Qty: 1,
						RequestID: rid, Now: time.Now()})
					if err != nil {
						fail <- "admit: " + err.Error()
						return
					}
					if res.Code == stock.Admitted {
						admitted.Add(1)
						mu.Lock()
						if prev, dup := holders[u]; dup {
							fail <- "buyer " + itoa(u) + " admitted twice: " + prev + " and " + rid
						}
						holders[u] = rid
						mu.Unlock()
						break
					}
					if res.Code != stock.SoldOut {
						fail <- "admit user " + itoa(u) + ": " + string(res.Code)
						return
					}
					refusals.Add(1)
					gone, err := e.soldOut(item, n, 1)
					if err != nil {
						fail <- "sold out everywhere: " + err.Error()
						return
					}
					if gone {
						return
					}
					if time.Since(start) > saleLimit { // a hang guard, not a speed bound
						fail <- "the sale did not end within " + saleLimit.String()
						return
					}
					// Real time is the subject: a refused buyer comes back
					// at the pace the ingress polls an empty bucket
					// (FLASHSALE_BUCKET_POLL), while the rebalancer's loop
					// moves stock on its own real interval; retrying at once
					// would only spin 40 workers against Redis.
					time.Sleep(time.Duration(10+rng.IntN(16)) * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(fail)
	for msg := range fail {
		t.Error(msg)
	}
	if t.Failed() {
		t.FailNow()
	}
	// The last pass may still be finishing a transfer: every unit was sold,
	// so it can only be abandoned now, or move nothing.
	var open int64
	testenv.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
		var err error
		if open, err = store.OpenTransfersOf(ctx, e.db, item); err != nil {
			t.Fatal(err)
		}
		return open == 0 && e.rdb.SCard(ctx, stock.KeysOf(item).TransfersLive()).Val() == 0
	}, "transfers still open after the sale (%v in MySQL)", lazy(func() string { return itoa(open) }))
	stop()
	if err := <-loopDone; err != nil {
		t.Fatal(err)
	}

	if got := admitted.Load(); got != total {
		t.Fatalf("admitted %d; want exactly %d", got, total)
	}
	s := e.conserved(item, n, total)
	var reserved int64
	for b := range n {
		if s.redis[b] != 0 {
			t.Errorf("bucket %d ends with %d units in Redis; want 0", b, s.redis[b])
		}
		reserved += s.reserved[b]
	}
	if reserved != total || int64(len(holders)) != total {
		t.Fatalf("%d reservations, %d buyers; want %d each", reserved, len(holders), total)
	}
	st := e.settled(item)
	done := e.metric("flashsale_bucket_transfers_total", "result", "done")
	units := e.metric("flashsale_bucket_transfer_units_total")
	if units < 300 {
		t.Errorf("units moved = %v; want at least the 300 of the 6 buckets without buyers", units)
	}
	t.Logf("sold %d units to buyers of 2 of %d buckets in %v: %d refusals retried, transfers %v (done counted %v, %v units), %v passes",
		total, n, took.Round(time.Millisecond), refusals.Load(), st, done, units,
		e.metric("flashsale_rebalance_pass_duration_seconds"))
}
