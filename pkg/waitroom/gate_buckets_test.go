package waitroom_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// bucketedQueue is a bucketed queued item on a test's stores, its sale
// open, and the line of its tickets.
type bucketedQueue struct {
	t    *testing.T
	db   *sql.DB
	rdb  redis.UniversalClient
	st   *stock.Store
	item int64
	n    int
	line []waitroom.Ticket // in serving order
}

// newBucketedQueue saves and warms an item of n buckets of per units each
// with a waiting room, its sale started a minute ago, and gives users
// 1..tickets a ticket each, one after the other (taken after the start,
// with no shuffle window: served in arrival order).
func newBucketedQueue(t *testing.T, n int, per int64, tickets int) *bucketedQueue {
	t.Helper()
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	q := &bucketedQueue{t: t, db: db, rdb: rdb, st: stock.New(rdb), item: testenv.ItemID(), n: n}
	ctx := context.Background()
	now := time.Now()
	cat := catalog.New(db, q.st, testenv.NoLag)
	if _, err := cat.Put(ctx, store.Item{ID: q.item, Name: "bucketed queue", PriceCents: 1, TotalStock: int64(n) * per, PerUserLimit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: n, ItemQueue: store.ItemQueue{Queue: true, QueueOpensAt: now.Add(-time.Hour), QueueRate: 1000}}); err != nil {
		t.Fatal(err)
	}
	for u := 1; u <= tickets; u++ {
		if _, _, err := waitroom.NewStore(q.st).TakeTicket(ctx, q.item, int64(u), fmt.Sprintf("%032x", u), now.Add(-time.Hour), false); err != nil {
			t.Fatal(err)
		}
	}
	it, err := waitroom.ReadItem(ctx, db, q.item)
	if err != nil {
		t.Fatal(err)
	}
	// Its round closed at the start: a gate's pass closes it in MySQL
	// (CloseRounds), and only then has a ticket a place in line.
	if _, err := waitroom.CloseRounds(ctx, db, waitroom.NewStore(q.st), it, time.Now()); err != nil {
		t.Fatal(err)
	}
	if q.line, err = waitroom.ServingLine(ctx, db, waitroom.NewStore(q.st), it); err != nil || len(q.line) != tickets {
		t.Fatalf("the line: %d tickets, %v; want %d", len(q.line), err, tickets)
	}
	return q
}

// gate returns a gate of its own lease on q's stores, whose waitlist moves
// units between buckets through a rebalancer (as the reaper's main wires
// it) unless mover is false.
func (q *bucketedQueue) gate(window time.Duration, mover bool) (*waitroom.Gate, *waitroom.GateMetrics) {
	cfg := waitroom.GateConfig{Interval: 5 * time.Millisecond, Lease: 2 * time.Second, LeaseKey: "fs:test:gate:" + testenv.Suffix(),
		ClaimWindow: window, StoreTimeout: 5 * time.Second}
	if mover {
		cfg.Mover = rebalance.New(rebalance.Config{StoreTimeout: 5 * time.Second}, rebalance.Deps{DB: q.db, Redis: q.rdb},
			rebalance.NewMetrics(prometheus.NewRegistry()), quietLog())
	}
	m := waitroom.NewGateMetrics(prometheus.NewRegistry())
	return waitroom.NewGate(cfg, q.db, q.rdb, m, quietLog()), m
}

// buy admits the first k ticket holders of the line whose home is bucket b
// (with grants) and returns their users and request ids.
func (q *bucketedQueue) buy(b, k int) (users []int64, rids []string) {
	q.t.Helper()
	for _, tk := range q.line {
		if len(users) == k {
			break
		}
		if stock.HomeBucket(tk.UserID, q.n) != b {
			continue
		}
		rid := reqid.NewIn(q.item, b, time.Now())
		r, err := q.st.Admit(context.Background(), stock.AdmitRequest{ItemID: q.item, Buckets: q.n, Bucket: b, UserID: tk.UserID, Qty: 1, RequestID: rid, Now: time.Now(), Granted: true})
		if err != nil || r.Code != stock.Admitted {
			q.t.Fatalf("admit user %d in bucket %d: %+v %v", tk.UserID, b, r, err)
		}
		users, rids = append(users, tk.UserID), append(rids, rid)
	}
	return users, rids
}

// offerBucket is the bucket whose offers hold user's offer ("-1": none,
// and the test fails if two do).
func (q *bucketedQueue) offerBucket(user int64) int {
	q.t.Helper()
	at := -1
	for b := range q.n {
		if q.rdb.HExists(context.Background(), stock.BucketKeys(q.item, b).Offers, fmt.Sprint(user)).Val() {
			if at >= 0 {
				q.t.Fatalf("user %d has offers in buckets %d and %d", user, at, b)
			}
			at = b
		}
	}
	return at
}

// conserved checks both stores bucket by bucket, with no order written:
// MySQL's stock is Redis' stock + what the bucket's share of the waitlist
// holds + its reservations, and every share balances.
func (q *bucketedQueue) conserved() waitroom.Waitlist {
	q.t.Helper()
	ctx := context.Background()
	rows, err := store.BucketRows(ctx, q.db, q.item, false)
	if err != nil {
		q.t.Fatal(err)
	}
	stocks, err := q.st.BucketStocks(ctx, q.item, q.n)
	if err != nil {
		q.t.Fatal(err)
	}
	w := sharesOf(q.t, q.st, q.item, q.n)
	for b, row := range rows {
		resv := q.rdb.HLen(ctx, stock.BucketKeys(q.item, b).Reservations).Val()
		if row.Stock != stocks[b]+w.PerBucket[b].Held()+resv {
			q.t.Errorf("bucket %d: MySQL stock %d != Redis stock %d + waitlist %d + %d reservations", b, row.Stock, stocks[b], w.PerBucket[b].Held(), resv)
		}
	}
	if q.t.Failed() {
		q.t.FailNow()
	}
	return w
}

// TestGateOffersBucketedUnitsDownTheLine: units released in one bucket of
// a sold-out bucketed queued item go to the first tickets in line whose
// buyers hold nothing, whatever their home buckets: the gate moves each
// unit to its buyer's home bucket (a waitlist transfer, in MySQL and
// Redis) and offers it there, where the buyer's claim lands. An offer left
// to lapse passes to the next ticket in line, moved again if its buyer's
// home is another bucket. Before issue 41 the units went to the stock,
// first come.
func TestGateOffersBucketedUnitsDownTheLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 4
	q := newBucketedQueue(t, n, 2, 40)
	holds := map[int64]bool{}
	var rids3 []string
	for b := range n {
		users, rids := q.buy(b, 2)
		for _, u := range users {
			holds[u] = true
		}
		if b == 3 {
			rids3 = rids
		}
	}
	// Bucket 3's two orders are not taken (their publish failed): sold
	// out, the units are its share of the waitlist's.
	for _, rid := range rids3 {
		if ok, err := q.st.Release(ctx, q.item, rid, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
			t.Fatalf("release: %v %v", ok, err)
		}
	}
	for _, tk := range q.line {
		if stock.HomeBucket(tk.UserID, n) == 3 && holds[tk.UserID] {
			delete(holds, tk.UserID) // their marks are gone with the releases
		}
	}
	var next []int64 // the line's buyers who hold nothing, in order
	for _, tk := range q.line {
		if !holds[tk.UserID] {
			next = append(next, tk.UserID)
		}
	}
	g, m := q.gate(time.Second, true) // the claim below comes well within it; the lapse is waited for
	if err := g.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	w := q.conserved()
	if w.Offers != 2 || w.Pool != 0 || w.Moving() != 0 {
		t.Fatalf("after a pass: %+v, want both units on offer", w)
	}
	for _, u := range next[:2] {
		if b := q.offerBucket(u); b != stock.HomeBucket(u, n) {
			t.Fatalf("user %d's offer is in bucket %d, want their home bucket %d", u, b, stock.HomeBucket(u, n))
		}
	}
	if b := q.offerBucket(next[2]); b >= 0 {
		t.Fatalf("the third buyer in line (user %d) has an offer too", next[2])
	}
	moved := 0
	for _, u := range next[:2] {
		if stock.HomeBucket(u, n) != 3 {
			moved++
		}
	}
	if got := testutil.ToFloat64(m.Waitlist.WithLabelValues("moved")); int(got) != moved || int(w.MovedIn) != moved {
		t.Fatalf("units moved: metric %v, shares %d; want %d (the offered buyers not of bucket 3)", got, w.MovedIn, moved)
	}
	t.Logf("offers to users %v (home buckets %d, %d), %d units moved from bucket 3", next[:2], stock.HomeBucket(next[0], n), stock.HomeBucket(next[1], n), moved)

	// The first claims; the second lets the offer lapse.
	if c, _ := claimIn(t, q.st, q.item, n, next[0]); c != stock.Admitted {
		t.Fatalf("claim by user %d: %s", next[0], c)
	}
	o, ok, err := waitroom.NewStore(q.st).OfferOf(ctx, q.item, next[1])
	if err != nil || !ok {
		t.Fatalf("user %d's offer: %v %v", next[1], ok, err)
	}
	untilRedisPasses(t, q.st, o.Expires)
	if err := g.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	w = q.conserved()
	if w.Lapsed != 1 || w.Offers != 1 || w.Claimed != 1 || w.Pool != 0 {
		t.Fatalf("after the lapse: %+v, want 1 lapsed, 1 on offer again, 1 claimed", w)
	}
	if b := q.offerBucket(next[2]); b != stock.HomeBucket(next[2], n) {
		t.Fatalf("the lapsed unit: user %d's offer in bucket %d, want it in their home bucket %d", next[2], b, stock.HomeBucket(next[2], n))
	}
	if b := q.offerBucket(next[1]); b >= 0 {
		t.Fatalf("user %d keeps a lapsed offer in bucket %d", next[1], b)
	}
	if c, _ := claimIn(t, q.st, q.item, n, next[2]); c != stock.Admitted {
		t.Fatalf("claim by user %d: %s", next[2], c)
	}
	if w := q.conserved(); w.Claimed != 2 || w.Held() != 0 || w.In != 2 {
		t.Fatalf("final: %+v", w)
	}
}

// TestGateWithoutMoverServesEachBucketsOwn: a gate built with no mover
// offers each bucket's units to that bucket's buyers only, and passes over
// a ticket whose bucket has none; with nobody of the bucket left in line,
// the unit goes back to its own bucket's stock.
func TestGateWithoutMoverServesEachBucketsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 2
	q := newBucketedQueue(t, n, 1, 12)
	q.buy(0, 1)
	_, rids := q.buy(1, 1)
	if ok, err := q.st.Release(ctx, q.item, rids[0], stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	g, _ := q.gate(time.Minute, false)
	if err := g.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	w := q.conserved()
	if w.Offers != 1 || w.MovedIn != 0 {
		t.Fatalf("after a pass: %+v, want one offer, nothing moved", w)
	}
	for _, tk := range q.line {
		b := q.offerBucket(tk.UserID)
		if b < 0 {
			continue
		}
		if b != 1 || stock.HomeBucket(tk.UserID, n) != 1 {
			t.Fatalf("user %d (home %d) offered in bucket %d, want a buyer of bucket 1", tk.UserID, stock.HomeBucket(tk.UserID, n), b)
		}
	}
}

// recordingMover is a PoolMover that moves nothing and records the items
// it was asked to resume.
type recordingMover struct {
	mu      sync.Mutex
	resumed []int64
	moves   int
}

func (m *recordingMover) MovePool(context.Context, int64, int, int, int, int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.moves++
	return 0, nil
}

func (m *recordingMover) ResumePool(_ context.Context, itemID int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resumed = append(m.resumed, itemID)
	return nil
}

// TestGateResumesAMoveLeftHalfWay: when a bucketed item's shares show units
// taken out of one pool and given to none (a mover died between a
// transfer's writes), the gate's pass asks its mover to finish the item's
// open transfers before it offers anything; with nothing moving it does
// not.
func TestGateResumesAMoveLeftHalfWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 2
	q := newBucketedQueue(t, n, 1, 6)
	q.buy(0, 1)
	_, rids := q.buy(1, 1)
	if ok, err := q.st.Release(ctx, q.item, rids[0], stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	m := &recordingMover{}
	g := waitroom.NewGate(waitroom.GateConfig{Interval: 5 * time.Millisecond, Lease: 2 * time.Second, LeaseKey: "fs:test:gate:" + testenv.Suffix(),
		ClaimWindow: time.Minute, StoreTimeout: 5 * time.Second, Mover: m}, q.db, q.rdb, waitroom.NewGateMetrics(prometheus.NewRegistry()), quietLog())
	if err := g.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if len(m.resumed) != 0 {
		t.Fatalf("resumed %v with nothing moving", m.resumed)
	}
	// Another unit released in bucket 1 and taken out of its pool by a
	// transfer (as waitlist_out.lua leaves it), and not given anywhere yet.
	k1 := stock.BucketKeys(q.item, 1)
	q.rdb.HIncrBy(ctx, k1.Waitlist, "in", 1)
	q.rdb.HIncrBy(ctx, k1.Waitlist, "moved_out", 1)
	if w := sharesOf(t, q.st, q.item, n); w.Moving() != 1 {
		t.Fatalf("planted: %+v, want one unit moving", w)
	}
	if err := g.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if len(m.resumed) != 1 || m.resumed[0] != q.item {
		t.Fatalf("resumed %v, want item %d once", m.resumed, q.item)
	}
}
