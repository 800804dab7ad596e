package waitroom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// soldOutBucketed warms an open, queued item of n buckets of one unit each
// and admits one buyer per bucket (buyers[b], whose home is b), so every
// bucket's stock is gone; it returns the item and the admitted request ids
// by bucket.
func soldOutBucketed(t *testing.T, s *stock.Store, n int) (item int64, buyers []int64, rids []string) {
	t.Helper()
	ctx := context.Background()
	item = testenv.ItemID()
	now := time.Now()
	units := make([]int64, n)
	for b := range units {
		units[b] = 1
	}
	if err := s.Warm(ctx, stock.Snapshot{ItemID: item, BucketStock: units, StartsAt: now.Add(-time.Second), EndsAt: now.Add(time.Hour), PerUserLimit: 1, Queue: true}); err != nil {
		t.Fatal(err)
	}
	var u int64
	for b := range n {
		u = testenv.UserIn(b, n, u+1)
		rid := reqid.NewIn(item, b, now)
		r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: n, Bucket: b, UserID: u, Qty: 1, RequestID: rid, Now: now, Granted: true})
		if err != nil || r.Code != stock.Admitted {
			t.Fatalf("admit user %d in bucket %d: %+v %v", u, b, r, err)
		}
		buyers, rids = append(buyers, u), append(rids, rid)
	}
	return item, buyers, rids
}

// claimIn is user's order of item (n buckets) on their waitlist offer, in
// their home bucket as the ingress sends it.
func claimIn(t *testing.T, s *stock.Store, item int64, n int, user int64) (stock.AdmitCode, string) {
	t.Helper()
	b := stock.HomeBucket(user, n)
	rid := reqid.NewIn(item, b, time.Now())
	r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, Buckets: n, Bucket: b, UserID: user, Qty: 1, RequestID: rid, Now: time.Now(), Claim: true})
	if err != nil {
		t.Fatalf("claim of user %d: %v", user, err)
	}
	return r.Code, rid
}

// sharesOf reads item's n shares of its waitlist and fails unless each one
// and their sum balance (I9).
func sharesOf(t *testing.T, s *stock.Store, item int64, n int) waitroom.Waitlist {
	t.Helper()
	w, err := waitroom.NewStore(s).ReadShares(context.Background(), item, n)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Balanced() {
		t.Fatalf("I9 of the sum: %+v", w)
	}
	for b, sh := range w.PerBucket {
		if !sh.Balanced() {
			t.Fatalf("I9 of bucket %d: %+v", b, sh)
		}
	}
	return w
}

// TestBucketedWaitlistHandOff: a unit released in a bucket of a sold-out
// bucketed queued item goes to that bucket's share of the waitlist, not
// back to its stock (before issue 41 it went to the stock, first come); a
// cancelled order's restore and a released reservation alike. It is
// offered to a buyer whose home is that bucket, found by OfferOf and by
// the item's offers, claimed once in the buyer's home bucket (a claim in
// any other bucket finds no offer); a claim not taken gives the unit back
// to the same offer; lapsed, it goes back to the bucket's pool; with
// nobody left in line, to the bucket's stock. Every share balances at
// every step.
func TestBucketedWaitlistHandOff(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	w := waitroom.NewStore(s)
	ctx := context.Background()
	const n = 3
	item, buyers, rids := soldOutBucketed(t, s, n)
	if err := s.Settle(ctx, item, rids[:1]); err != nil {
		t.Fatal(err)
	}

	// Bucket 0's order was written, then cancelled unpaid: its restore.
	if r, err := s.Restore(ctx, item, 0, rids[0], 1); err != nil || r != stock.RestoreWaitlisted {
		t.Fatalf("restore in bucket 0 while sold out: %v %v, want held for the waitlist", r, err)
	}
	// Bucket 2's reservation was never written (its publish failed).
	if ok, err := s.Release(ctx, item, rids[2], stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
		t.Fatalf("release in bucket 2: %v %v", ok, err)
	}
	if st, _ := s.BucketStocks(ctx, item, n); st[0] != 0 || st[2] != 0 {
		t.Fatalf("bucket stocks %v after the releases, want 0 in every bucket: the units are the waitlist's", st)
	}
	sh := sharesOf(t, s, item, n)
	if sh.In != 2 || sh.PerBucket[0].Pool != 1 || sh.PerBucket[2].Pool != 1 || sh.PerBucket[1].Pool != 0 {
		t.Fatalf("shares after the releases: %+v, want one unit in the pools of buckets 0 and 2", sh)
	}

	// The line: a waiting buyer of bucket 2 gets bucket 2's unit.
	u2 := testenv.UserIn(2, n, buyers[n-1]+1)
	line := []waitroom.Candidate{{Position: 1, Ticket: fmt.Sprintf("%032x", 1), UserID: u2}}
	if c, _ := claimIn(t, s, item, n, u2); c != stock.NoOffer {
		t.Fatalf("claim before any offer: %s, want no_offer", c)
	}
	p, err := w.OfferReleasedIn(ctx, item, 2, time.Second, line, false)
	if err != nil || p.Offered != 1 || p.Pool != 0 || p.Cursor != 1 {
		t.Fatalf("offer in bucket 2: %+v %v, want one offer", p, err)
	}
	o, ok, err := w.OfferOf(ctx, item, u2)
	if err != nil || !ok || o.Ticket != line[0].Ticket {
		t.Fatalf("OfferOf user %d (home bucket 2): %+v %v %v, want the offer", u2, o, ok, err)
	}
	if all, err := w.Offers(ctx, item); err != nil || len(all) != 1 || all[u2].Ticket != line[0].Ticket {
		t.Fatalf("the item's offers: %v %v, want user %d's", all, err, u2)
	}
	// A claim sent to another bucket (an ingress with a stale count, say)
	// finds nothing there.
	rid := reqid.NewIn(item, 1, time.Now())
	if r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: n, Bucket: 1, UserID: u2, Qty: 1, RequestID: rid, Now: time.Now(), Claim: true}); err != nil || r.Code != stock.NoOffer {
		t.Fatalf("claim in bucket 1 of an offer held in bucket 2: %+v %v, want no_offer", r, err)
	}
	c, claimRID := claimIn(t, s, item, n, u2)
	if c != stock.Admitted {
		t.Fatalf("claim in the buyer's home bucket: %s, want ok", c)
	}
	if c, _ := claimIn(t, s, item, n, u2); c != stock.Already {
		t.Fatalf("second claim: %s, want already", c)
	}
	if sh := sharesOf(t, s, item, n); sh.PerBucket[2].Claimed != 1 || sh.Offers != 0 {
		t.Fatalf("after the claim: %+v", sh)
	}
	// Its publish fails within the window: the offer is the buyer's again.
	if ok, err := s.Release(ctx, item, claimRID, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
		t.Fatalf("release of the claim: %v %v", ok, err)
	}
	if _, ok, _ := w.OfferOf(ctx, item, u2); !ok {
		t.Fatal("the offer of a claim not taken did not come back")
	}
	if sh := sharesOf(t, s, item, n); sh.PerBucket[2].Claimed != 0 || sh.PerBucket[2].Offers != 1 {
		t.Fatalf("after the claim's release: %+v", sh)
	}
	// Left unclaimed, it lapses to bucket 2's pool; nobody left in line,
	// each pool goes back to its own bucket's stock.
	untilRedisPasses(t, s, o.Expires)
	if p, err := w.OfferReleasedIn(ctx, item, 2, time.Second, nil, false); err != nil || p.Lapsed != 1 || p.Pool != 1 {
		t.Fatalf("lapse in bucket 2: %+v %v", p, err)
	}
	for _, b := range []int{0, 2} {
		if p, err := w.OfferReleasedIn(ctx, item, b, time.Second, nil, true); err != nil || p.Returned != 1 || p.Pool != 0 {
			t.Fatalf("end of the line in bucket %d: %+v %v, want 1 returned", b, p, err)
		}
	}
	if st, _ := s.BucketStocks(ctx, item, n); st[0] != 1 || st[1] != 0 || st[2] != 1 {
		t.Fatalf("bucket stocks %v at the end, want [1 0 1]: each unit back where it was released", st)
	}
	if sh := sharesOf(t, s, item, n); sh.In != 2 || sh.Returned != 2 || sh.Held() != 0 || sh.Offered != 1 || sh.Lapsed != 1 {
		t.Fatalf("final: %+v", sh)
	}
}

// TestBucketedWarmFoldsTheShares: a full warm gives what each bucket's
// share holds back to its stock (MySQL's stock already counts it), and
// folds the units moved between shares into in, so each share and the sum
// still balance once a re-bucketing retires a bucket.
func TestBucketedWarmFoldsTheShares(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	const n = 2
	item, _, rids := soldOutBucketed(t, s, n)
	for b, rid := range rids {
		if ok, err := s.Release(ctx, item, rid, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
			t.Fatalf("release in bucket %d: %v %v", b, ok, err)
		}
	}
	// A waitlist transfer from bucket 1's pool to bucket 0's, as
	// pkg/rebalance's steps leave it.
	rdb := s.Client()
	k0, k1 := stock.BucketKeys(item, 0), stock.BucketKeys(item, 1)
	rdb.HIncrBy(ctx, k1.Waitlist, "pool", -1)
	rdb.HIncrBy(ctx, k1.Waitlist, "moved_out", 1)
	rdb.HIncrBy(ctx, k0.Waitlist, "pool", 1)
	rdb.HIncrBy(ctx, k0.Waitlist, "moved_in", 1)
	if sh := sharesOf(t, s, item, n); sh.PerBucket[0].Pool != 2 || sh.Moving() != 0 {
		t.Fatalf("after the transfer: %+v", sh)
	}
	// MySQL's stock: the two released units, both in bucket 0 now; then
	// re-bucketed to one bucket.
	now := time.Now()
	if err := s.Warm(ctx, stock.Snapshot{ItemID: item, Stock: 2, PrevBuckets: n, StartsAt: now.Add(-time.Second), EndsAt: now.Add(time.Hour), PerUserLimit: 1, Queue: true}); err != nil {
		t.Fatal(err)
	}
	sh := sharesOf(t, s, item, 1)
	if sh.In != 2 || sh.Returned != 2 || sh.Held() != 0 || sh.MovedIn != 0 {
		t.Fatalf("after the warm: %+v, want in 2 (one released there, one moved in), 2 returned", sh)
	}
	if left, _, _ := s.Stock(ctx, item); left != 2 {
		t.Fatalf("stock %d after the warm, want 2", left)
	}
	if rdb.Exists(ctx, k1.Waitlist).Val() != 0 {
		t.Fatal("the retired bucket keeps its share of the waitlist")
	}
}
