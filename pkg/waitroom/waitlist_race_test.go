package waitroom_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// consumer writes orders as the pipeline's consumer does for one item (one
// partition: one write at a time), then settles them in Redis.
type consumer struct {
	t  *testing.T
	q  *bucketedQueue
	mu sync.Mutex
}

// write writes userID's reserved request rid with a payment window, and
// reports whether MySQL took it.
func (c *consumer) write(ctx context.Context, rid string, userID int64, window time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := &orderwriter.ItemWriter{DB: c.q.db, PaymentWindow: window, TxTimeout: 10 * time.Second}
	res, err := w.WriteItem(ctx, c.q.item, []orderlog.OrderMessage{{V: orderlog.MessageVersion, RequestID: rid, ItemID: c.q.item, UserID: userID, Qty: 1}})
	if err != nil {
		c.t.Errorf("write %s: %v", rid, err)
		return false
	}
	if len(res.Ordered) != 1 {
		c.t.Errorf("write %s of user %d (bucket %d): rejected %+v; MySQL had no unit for it in its bucket", rid, userID, reqid.Bucket(rid), res.Rejected)
		return false
	}
	if err := c.q.st.Settle(ctx, c.q.item, []string{rid}); err != nil {
		c.t.Errorf("settle %s: %v", rid, err)
	}
	return true
}

// TestBucketedWaitlistRace races, on one sold-out bucketed queued item (4
// buckets), everything that moves its released units at once: two gate
// holders (each with its own lease, as a paused holder waking after its
// lease was taken) offering units down the line and moving them between
// buckets, each through its own mover; two reapers cancelling unpaid
// orders and restoring their units; a rebalancer moving stock; 24 waiting
// buyers polling for offers and claiming them in their home buckets, some
// of whose claims are not taken (their publish failed: released back to
// the offer or the pool) or taken and left unpaid (cancelled: released
// again), a quarter never claiming (their offers lapse and pass on), until
// the line is walked to its end.
// Throughout, every bucket's share of the waitlist balances at every read
// (a unit in exactly one place), no buyer holds two offers or one outside
// their home bucket. At the end, with nothing held or moving: the audit
// holds in MySQL and Redis, bucket by bucket (I1-I9), every claim MySQL was
// given found its unit in its buyer's bucket, no buyer has two orders, and
// every unit that came into the waitlist was claimed or given back to the
// stock.
func TestBucketedWaitlistRace(t *testing.T) {
	t.Parallel()
	const n, per, waiting = 4, 6, 24
	units := n * per
	q := newBucketedQueue(t, n, int64(per), units+waiting)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := &consumer{t: t, q: q}

	// The sale: the first per buyers of each bucket in line buy; every
	// other one never pays (a payment window of a millisecond).
	holds := map[int64]bool{}
	var unpaid int
	for b := range n {
		users, rids := q.buy(b, per)
		for i, u := range users {
			holds[u] = true
			window := time.Hour
			if i%2 == 0 {
				window, unpaid = time.Millisecond, unpaid+1
			}
			if !c.write(ctx, rids[i], u, window) {
				t.FailNow()
			}
		}
	}

	run, stop := context.WithCancel(ctx)
	var actors sync.WaitGroup
	defer func() { stop(); actors.Wait() }()
	for range 2 {
		g, _ := q.gate(150*time.Millisecond, true)
		actors.Go(func() { _ = g.Run(run) })
	}
	for range 2 {
		r := reap.New(reap.Config{Interval: 10 * time.Millisecond, BatchSize: 50, OrphanGrace: time.Minute, StoreTimeout: 5 * time.Second},
			reap.Deps{DB: q.db, Stock: q.st}, reap.NewMetrics(prometheus.NewRegistry()), quietLog())
		actors.Go(func() { _ = r.Run(run) })
	}
	rb := rebalance.New(rebalance.Config{Interval: 20 * time.Millisecond, Lease: time.Second, LeaseKey: "fs:test:rebalance:lease:" + testenv.Suffix(), StoreTimeout: 5 * time.Second},
		rebalance.Deps{DB: q.db, Redis: q.rdb}, rebalance.NewMetrics(prometheus.NewRegistry()), quietLog())
	actors.Go(func() { _ = rb.Run(run) })

	// The waiting buyers.
	var claims, notTaken, leftUnpaid atomic.Int64
	claimed := sync.Map{} // request id -> user, of every claim MySQL took
	wr := waitroom.NewStore(q.st)
	for _, tk := range q.line {
		u := tk.UserID
		if holds[u] {
			continue
		}
		actors.Go(func() {
			failOnce, decline, dontPay := u%5 == 1, u%4 == 0, u%3 == 0
			tick := time.NewTicker(time.Duration(2+u%5) * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-run.Done():
					return
				case <-tick.C:
				}
				o, ok, err := wr.OfferOf(run, q.item, u)
				if err != nil || !ok || decline || !time.Now().Before(o.Expires) {
					continue
				}
				h := stock.HomeBucket(u, n)
				rid := reqid.NewIn(q.item, h, time.Now())
				r, err := q.st.Admit(run, stock.AdmitRequest{ItemID: q.item, Buckets: n, Bucket: h, UserID: u, Qty: 1, RequestID: rid, Now: time.Now(), Claim: true})
				if err != nil || r.Code != stock.Admitted {
					continue // no_offer: lapsed meanwhile (or the run is over)
				}
				claims.Add(1)
				if failOnce {
					failOnce = false
					notTaken.Add(1)
					if ok, err := q.st.Release(run, q.item, rid, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
						t.Errorf("release of user %d's claim: %v %v", u, ok, err)
					}
					continue
				}
				window := time.Hour
				if dontPay {
					window = time.Millisecond
					leftUnpaid.Add(1)
				}
				if c.write(run, rid, u, window) {
					claimed.Store(rid, u)
				}
				return // the buyer holds the item now
			}
		})
	}

	// Every share at every read, and the offers, while it all runs.
	var samples atomic.Int64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for run.Err() == nil {
			w, err := wr.ReadShares(run, q.item, n)
			if err != nil {
				continue
			}
			for b, sh := range w.PerBucket {
				if !sh.Balanced() {
					t.Errorf("sample %d: bucket %d's share does not balance: %+v", samples.Load(), b, sh)
				}
			}
			seen := map[string]int{}
			for b := range n {
				users, err := q.rdb.HKeys(run, stock.BucketKeys(q.item, b).Offers).Result()
				if err != nil {
					continue
				}
				for _, u := range users {
					if prev, dup := seen[u]; dup {
						t.Errorf("user %s has offers in buckets %d and %d", u, prev, b)
					}
					seen[u] = b
					var uid int64
					fmt.Sscan(u, &uid)
					if h := stock.HomeBucket(uid, n); h != b {
						t.Errorf("user %s's offer is in bucket %d, not their home bucket %d", u, b, h)
					}
				}
			}
			samples.Add(1)
			time.Sleep(3 * time.Millisecond)
		}
	}()

	// Quiescence: units went through the waitlist, and now nothing is
	// held, moving, reserved, or unpaid past its window.
	testenv.Eventually(t, 90*time.Second, 50*time.Millisecond, func() bool {
		w, err := wr.ReadShares(ctx, q.item, n)
		if err != nil || w.In < int64(unpaid) || w.Held() != 0 || w.Moving() != 0 {
			return false
		}
		var open int64
		err = q.db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'UNPAID' AND expires_at < NOW(3) + INTERVAL 1 SECOND)"+
			" + (SELECT COUNT(*) FROM stock_restores WHERE item_id = ? AND redis_applied_at IS NULL)"+
			" + (SELECT COUNT(*) FROM stock_transfers WHERE item_id = ? AND state IN ('PLANNED','MOVED'))", q.item, q.item, q.item).Scan(&open)
		if err != nil || open != 0 {
			return false
		}
		st, err := q.st.ReadState(ctx, q.item)
		return err == nil && st.Pending == 0
	}, "the waitlist never came to rest")
	stop()
	actors.Wait()
	<-sampled

	rep, err := audit.Item(ctx, q.db, q.st, q.item)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || len(rep.Info) != 0 {
		t.Fatalf("audit at rest: %+v", rep)
	}
	w := *rep.Waitlist
	// Fewer buyers in line pay for a claim than the sale left unpaid, so
	// the line is walked to its end with units left: returned.
	if w.In != w.Claimed+w.Returned || w.Claimed == 0 || w.Lapsed == 0 || w.Moved == 0 || w.Returned == 0 {
		t.Fatalf("waitlist at rest: %+v; want every unit in claimed or returned, with claims, lapses, moves between buckets and returns", w)
	}
	var nClaimed int
	claimed.Range(func(k, v any) bool {
		nClaimed++
		var got int
		if err := q.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE request_id = ? AND user_id = ? AND item_id = ?", k, v, q.item).Scan(&got); err != nil || got != 1 {
			t.Errorf("claim %s of user %v: %d orders, %v; want one", k, v, got, err)
		}
		return true
	})
	var dup, orders int
	if err := q.db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM (SELECT user_id FROM orders WHERE item_id = ? GROUP BY user_id HAVING COUNT(*) > 1) d),"+
		" (SELECT COUNT(*) FROM orders WHERE item_id = ?)", q.item, q.item).Scan(&dup, &orders); err != nil {
		t.Fatal(err)
	}
	if dup != 0 || orders != units+nClaimed {
		t.Fatalf("%d buyers with two orders, %d orders; want none, %d (the sale's %d and the %d claims MySQL took)", dup, orders, units+nClaimed, units, nClaimed)
	}
	if rep.Unpaid+rep.Paid > rep.Total {
		t.Fatalf("oversold: %+v", rep)
	}
	t.Logf("%d units, %d sampled reads: %d claims (%d not taken, %d left unpaid), waitlist %+v; stock %d, active %d",
		units, samples.Load(), claims.Load(), notTaken.Load(), leftUnpaid.Load(), w, rep.RedisStock, rep.Unpaid+rep.Paid)
}
