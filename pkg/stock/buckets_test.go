package stock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// warmBuckets warms a new item with one bucket per entry of stocks.
func warmBuckets(t *testing.T, s *stock.Store, prev int, stocks ...int64) int64 {
	t.Helper()
	id := testenv.ItemID()
	rewarmBuckets(t, s, id, prev, nil, stocks...)
	return id
}

func rewarmBuckets(t *testing.T, s *stock.Store, id int64, prev int, buyers []stock.Holder, stocks ...int64) {
	t.Helper()
	now := time.Now()
	err := s.Warm(context.Background(), stock.Snapshot{ItemID: id, BucketStock: stocks, PrevBuckets: prev,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1, Buyers: buyers})
	if err != nil {
		t.Fatalf("warm: %v", err)
	}
}

func admitIn(t *testing.T, s *stock.Store, item int64, buckets int, user int64) (stock.AdmitResult, string) {
	t.Helper()
	b := stock.HomeBucket(user, buckets)
	rid := reqid.NewIn(item, b, time.Now())
	r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, Buckets: buckets, Bucket: b, UserID: user, Qty: 1,
		RequestID: rid, Now: time.Now()})
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	return r, rid
}

func TestHomeBucketSpreadsConsecutiveUsers(t *testing.T) {
	const n, users = 8, 80_000
	var per [n]int
	for u := int64(1); u <= users; u++ {
		per[stock.HomeBucket(u, n)]++
	}
	for b, c := range per {
		if c < users/n*95/100 || c > users/n*105/100 {
			t.Errorf("bucket %d holds %d of %d consecutive users; want %d within 5%%", b, c, users, users/n)
		}
	}
	if stock.HomeBucket(12345, 1) != 0 {
		t.Error("an unbucketed item's home bucket is not 0")
	}
}

// A bucketed item: admission runs in the buyer's home bucket, a short
// bucket raises its want flag, a stale bucket count is told Moved.
func TestBucketedAdmission(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := stock.New(rdb)
	ctx := context.Background()
	item := warmBuckets(t, s, 0, 1, 0, 0, 0)

	if n, warmed, err := s.Buckets(ctx, item); err != nil || !warmed || n != 4 {
		t.Fatalf("Buckets = %d, %v, %v; want 4", n, warmed, err)
	}
	u0, u1 := testenv.UserIn(0, 4, 1), testenv.UserIn(1, 4, 1)
	r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: 1, UserID: u0, Qty: 1, RequestID: reqid.New(item, time.Now()), Now: time.Now()})
	if err != nil || r.Code != stock.Moved || r.Buckets != 4 {
		t.Fatalf("admit with a stale count of 1 = %+v, %v; want moved to 4", r, err)
	}
	if r, _ := admitIn(t, s, item, 4, u1); r.Code != stock.SoldOut {
		t.Fatalf("admit in the empty bucket 1 = %+v; want sold_out (of that bucket)", r)
	}
	k1 := stock.BucketKeys(item, 1)
	if ttl := rdb.PTTL(ctx, k1.Want).Val(); ttl <= 0 || ttl > 2*time.Second {
		t.Fatalf("want flag of the short bucket has TTL %v; want set, at most 2s", ttl)
	}
	r, rid := admitIn(t, s, item, 4, u0)
	if r.Code != stock.Admitted || reqid.Bucket(rid) != 0 {
		t.Fatalf("admit in bucket 0 = %+v (%s)", r, rid)
	}
	if held, _ := rdb.HGet(ctx, stock.BucketKeys(item, 0).Holders, itoa(u0)).Result(); held != rid {
		t.Fatalf("buyer mark of %d in bucket 0 = %q; want %s", u0, held, rid)
	}
	if rdb.Exists(ctx, stock.BucketKeys(item, 0).Want).Val() != 0 {
		t.Fatal("bucket 0 raised its want flag with stock")
	}
	if st, err := s.ReadState(ctx, item); err != nil || st.Buckets != 4 || st.Stock != 0 || st.Pending != 1 || len(st.PerBucket) != 4 || st.PerBucket[0].Pending != 1 {
		t.Fatalf("ReadState = %+v, %v", st, err)
	}
	// Statuses and reservations of a bucket's request are found from its id.
	if _, ok, err := s.GetReservation(ctx, item, rid); err != nil || !ok {
		t.Fatalf("reservation of %s: %v %v", rid, ok, err)
	}
}

// Re-bucketing 4 -> 2: buyer marks move to their new home bucket, the
// retired buckets have no stock and tell a stale ingress Moved.
func TestWarmRebucketsAndRetires(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := stock.New(rdb)
	ctx := context.Background()
	item := warmBuckets(t, s, 0, 2, 2, 2, 2)
	var buyers []stock.Holder
	for u := int64(1); u <= 20; u++ {
		buyers = append(buyers, stock.Holder{UserID: u, RequestID: reqid.NewIn(item, stock.HomeBucket(u, 4), time.Now())})
	}
	rewarmBuckets(t, s, item, 4, buyers, 5, 3)
	if n, _, _ := s.Buckets(ctx, item); n != 2 {
		t.Fatalf("count after re-bucketing = %d, want 2", n)
	}
	for _, h := range buyers {
		rid, held, warmed, err := s.HeldBy(ctx, item, stock.HomeBucket(h.UserID, 2), h.UserID)
		if err != nil || !held || !warmed || rid != h.RequestID {
			t.Fatalf("buyer %d in new home bucket: %q %v %v %v", h.UserID, rid, held, warmed, err)
		}
	}
	if left, ok, err := s.Stock(ctx, item); err != nil || !ok || left != 8 {
		t.Fatalf("Stock = %d, %v, %v; want 8", left, ok, err)
	}
	u3 := testenv.UserIn(3, 4, 100)
	r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: 4, Bucket: 3, UserID: u3, Qty: 1, RequestID: reqid.NewIn(item, 3, time.Now()), Now: time.Now()})
	if err != nil || r.Code != stock.Moved || r.Buckets != 2 {
		t.Fatalf("admit in retired bucket 3 with the old count = %+v, %v; want moved to 2", r, err)
	}
	if rdb.Exists(ctx, stock.BucketKeys(item, 3).Stock).Val() != 0 {
		t.Fatal("retired bucket kept its stock")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
