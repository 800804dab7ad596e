package stock_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// warmForTransfer warms a new item with one bucket per entry of stocks
// (helpers of its own: other test files of the package come and go).
func warmForTransfer(t *testing.T, s *stock.Store, stocks ...int64) int64 {
	t.Helper()
	id := testenv.ItemID()
	now := time.Now()
	err := s.Warm(context.Background(), stock.Snapshot{ItemID: id, BucketStock: stocks,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1})
	if err != nil {
		t.Fatalf("warm: %v", err)
	}
	return id
}

func stocksOf(t *testing.T, s *stock.Store, item int64, n int) []int64 {
	t.Helper()
	st, err := s.BucketStocks(context.Background(), item, n)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func sameInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The out step is decided once: repeats answer the first answer and take
// nothing, even after the donor's stock changed.
func TestTransferOutDecidedOnce(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := stock.New(rdb)
	ctx := context.Background()
	item := warmForTransfer(t, s, 5, 0, 2)

	ok := stock.TransferRef{ItemID: item, ID: 1, From: 0, To: 1, Qty: 3, Token: 1000}
	for i := range 3 {
		if r, err := s.TransferOut(ctx, ok); err != nil || r != stock.TransferOK {
			t.Fatalf("out #%d = %q, %v; want ok", i+1, r, err)
		}
	}
	if got := stocksOf(t, s, item, 3); !sameInts(got, []int64{2, 0, 2}) {
		t.Fatalf("stocks after one out of 3 from bucket 0 = %v", got)
	}
	short := stock.TransferRef{ItemID: item, ID: 2, From: 2, To: 1, Qty: 3, Token: 1000}
	if r, err := s.TransferOut(ctx, short); err != nil || r != stock.TransferShort {
		t.Fatalf("out 3 of 2 = %q, %v; want short", r, err)
	}
	if err := rdb.IncrBy(ctx, stock.BucketKeys(item, 2).Stock, 10).Err(); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.TransferOut(ctx, short); r != stock.TransferShort {
		t.Fatalf("out repeated after the donor was refilled = %q; want short again (decided once)", r)
	}
	// A guard of the same id with another token is an earlier database's.
	stale := short
	stale.Token = 2000
	if r, _ := s.TransferOut(ctx, stale); r != stock.TransferOK {
		t.Fatalf("out with a new token over an old guard = %q; want ok", r)
	}
	if got := stocksOf(t, s, item, 3); !sameInts(got, []int64{2, 0, 9}) {
		t.Fatalf("stocks = %v", got)
	}
	if ttl := rdb.PTTL(ctx, stock.BucketKeys(item, 0).TransferGuard(1, "out")).Val(); ttl != -1 {
		t.Fatalf("out guard of an unfinished transfer has TTL %v; want none", ttl)
	}

	gone := stock.TransferRef{ItemID: item, ID: 3, From: 5, To: 1, Qty: 1, Token: 1000}
	if r, err := s.TransferOut(ctx, gone); err != nil || r != stock.TransferNoStock {
		t.Fatalf("out of a bucket without a stock key = %q, %v; want nostock", r, err)
	}
	if err := rdb.Set(ctx, stock.BucketKeys(item, 5).Stock, 10, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.TransferOut(ctx, gone); r != stock.TransferNoStock {
		t.Fatalf("out repeated after the bucket came back = %q; want nostock again", r)
	}
}

func TestTransferInOnceAndFinish(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := stock.New(rdb)
	ctx := context.Background()
	item := warmForTransfer(t, s, 5, 0)
	k1 := stock.BucketKeys(item, 1)
	if err := rdb.Set(ctx, k1.Want, "1", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	tr := stock.TransferRef{ItemID: item, ID: 7, From: 0, To: 1, Qty: 2, Token: 1000}
	if err := s.MarkTransferLive(ctx, item, tr.ID); err != nil {
		t.Fatal(err)
	}
	v, err := s.RebalanceView(ctx, item, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !sameInts(v.Stocks, []int64{5, 0, -1}) || v.Want[0] || !v.Want[1] || v.Want[2] || !sameInts(v.Live, []int64{7}) || v.Buckets != 2 {
		t.Fatalf("view = %+v", v)
	}
	if r, _ := s.TransferOut(ctx, tr); r != stock.TransferOK {
		t.Fatalf("out = %q", r)
	}
	if r, err := s.TransferIn(ctx, tr); err != nil || r != stock.TransferOK {
		t.Fatalf("in = %q, %v; want ok", r, err)
	}
	if r, err := s.TransferIn(ctx, tr); err != nil || r != stock.TransferSeen {
		t.Fatalf("in again = %q, %v; want seen", r, err)
	}
	if got := stocksOf(t, s, item, 2); !sameInts(got, []int64{3, 2}) {
		t.Fatalf("stocks after the transfer = %v; want [3 2]", got)
	}
	if rdb.Exists(ctx, k1.Want).Val() != 0 {
		t.Fatal("the recipient's want flag survived the transfer in")
	}
	if err := s.FinishTransfer(ctx, tr); err != nil {
		t.Fatal(err)
	}
	k := stock.KeysOf(item)
	if n := rdb.SCard(ctx, k.TransfersLive()).Val(); n != 0 {
		t.Fatalf("live transfers after finish = %d", n)
	}
	if d, _ := rdb.Get(ctx, k.TransfersDone()).Int(); d != 1 {
		t.Fatalf("done transfers = %d; want 1", d)
	}
	for _, g := range []string{k.TransferGuard(7, "out"), k1.TransferGuard(7, "in")} {
		if ttl := rdb.PTTL(ctx, g).Val(); ttl <= 0 || ttl > stock.TransferGuardTTL {
			t.Fatalf("guard %s of a finished transfer has TTL %v; want within (0, %v]", g, ttl, stock.TransferGuardTTL)
		}
	}

	lost := stock.TransferRef{ItemID: item, ID: 8, From: 0, To: 4, Qty: 1, Token: 1000}
	if r, err := s.TransferIn(ctx, lost); err != nil || r != stock.TransferNoStock {
		t.Fatalf("in to a bucket without a stock key = %q, %v; want nostock", r, err)
	}
	if err := rdb.Set(ctx, stock.BucketKeys(item, 4).Stock, 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.TransferIn(ctx, lost); r != stock.TransferSeen {
		t.Fatalf("in after the bucket was warmed = %q; want seen (MySQL's copy holds the qty)", r)
	}
	if got := stocksOf(t, s, item, 5)[4]; got != 0 {
		t.Fatalf("bucket 4 = %d; want 0", got)
	}
}

func TestRebalanceLease(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := stock.New(rdb)
	ctx := context.Background()
	key := "fs:test:lease:" + testenv.Suffix()
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	if ok, err := s.HoldLease(ctx, key, "a", time.Second); err != nil || !ok {
		t.Fatalf("a takes a free lease: %v, %v", ok, err)
	}
	if ok, _ := s.HoldLease(ctx, key, "b", time.Second); ok {
		t.Fatal("b took a's lease")
	}
	if ok, _ := s.HoldLease(ctx, key, "a", 5*time.Second); !ok {
		t.Fatal("a could not extend its lease")
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= time.Second {
		t.Fatalf("extended lease TTL %v; want above 1s", ttl)
	}
	if err := s.DropLease(ctx, key, "b"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.HoldLease(ctx, key, "b", time.Second); ok {
		t.Fatal("b's drop released a's lease")
	}
	if err := s.DropLease(ctx, key, "a"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.HoldLease(ctx, key, "b", time.Second); !ok {
		t.Fatal("b could not take the lease a dropped")
	}
}
