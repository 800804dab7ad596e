package rebalance

// The Redis steps of a transfer (steps.go) and the one-pipeline view
// (view.go), against Redis alone.

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

func stocksOf(t *testing.T, s *stock.Store, item int64, n int) []int64 {
	t.Helper()
	st, err := s.BucketStocks(context.Background(), item, n)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The out step is decided once: repeats answer the first answer and take
// nothing, even after the donor's stock changed.
func TestTransferOutDecidedOnce(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := stock.New(rdb)
	ctx := context.Background()
	item := testenv.WarmBuckets(t, s, 5, 0, 2)

	ok := ref{item: item, id: 1, from: 0, to: 1, qty: 3, token: 1000}
	for i := range 3 {
		if r, err := transferOut(ctx, rdb, ok); err != nil || r != stepOK {
			t.Fatalf("out #%d = %q, %v; want ok", i+1, r, err)
		}
	}
	if got := stocksOf(t, s, item, 3); !slices.Equal(got, []int64{2, 0, 2}) {
		t.Fatalf("stocks after one out of 3 from bucket 0 = %v", got)
	}
	short := ref{item: item, id: 2, from: 2, to: 1, qty: 3, token: 1000}
	if r, err := transferOut(ctx, rdb, short); err != nil || r != stepShort {
		t.Fatalf("out 3 of 2 = %q, %v; want short", r, err)
	}
	if err := rdb.IncrBy(ctx, stock.BucketKeys(item, 2).Stock, 10).Err(); err != nil {
		t.Fatal(err)
	}
	if r, _ := transferOut(ctx, rdb, short); r != stepShort {
		t.Fatalf("out repeated after the donor was refilled = %q; want short again (decided once)", r)
	}
	// A guard of the same id with another token is an earlier database's.
	stale := short
	stale.token = 2000
	if r, _ := transferOut(ctx, rdb, stale); r != stepOK {
		t.Fatalf("out with a new token over an old guard = %q; want ok", r)
	}
	if got := stocksOf(t, s, item, 3); !slices.Equal(got, []int64{2, 0, 9}) {
		t.Fatalf("stocks = %v", got)
	}
	if ttl := rdb.PTTL(ctx, stock.BucketKeys(item, 0).TransferGuard(1, "out")).Val(); ttl != -1 {
		t.Fatalf("out guard of an unfinished transfer has TTL %v; want none", ttl)
	}

	gone := ref{item: item, id: 3, from: 5, to: 1, qty: 1, token: 1000}
	if r, err := transferOut(ctx, rdb, gone); err != nil || r != stepNoStock {
		t.Fatalf("out of a bucket without a stock key = %q, %v; want nostock", r, err)
	}
	if err := rdb.Set(ctx, stock.BucketKeys(item, 5).Stock, 10, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r, _ := transferOut(ctx, rdb, gone); r != stepNoStock {
		t.Fatalf("out repeated after the bucket came back = %q; want nostock again", r)
	}
}

func TestTransferInOnceAndFinish(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := stock.New(rdb)
	ctx := context.Background()
	item := testenv.WarmBuckets(t, s, 5, 0)
	k1 := stock.BucketKeys(item, 1)
	if err := rdb.Set(ctx, k1.Want, "1", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	tr := ref{item: item, id: 7, from: 0, to: 1, qty: 2, token: 1000}
	if err := markLive(ctx, rdb, item, tr.id); err != nil {
		t.Fatal(err)
	}
	v, err := readView(ctx, rdb, item, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(v.stocks, []int64{5, 0, -1}) || v.want[0] || !v.want[1] || v.want[2] || !slices.Equal(v.live, []int64{7}) || v.buckets != 2 {
		t.Fatalf("view = %+v", v)
	}
	if r, _ := transferOut(ctx, rdb, tr); r != stepOK {
		t.Fatalf("out = %q", r)
	}
	if r, err := transferIn(ctx, rdb, tr); err != nil || r != stepOK {
		t.Fatalf("in = %q, %v; want ok", r, err)
	}
	if r, err := transferIn(ctx, rdb, tr); err != nil || r != stepSeen {
		t.Fatalf("in again = %q, %v; want seen", r, err)
	}
	if got := stocksOf(t, s, item, 2); !slices.Equal(got, []int64{3, 2}) {
		t.Fatalf("stocks after the transfer = %v; want [3 2]", got)
	}
	if rdb.Exists(ctx, k1.Want).Val() != 0 {
		t.Fatal("the recipient's want flag survived the transfer in")
	}
	if err := finishTransfer(ctx, rdb, tr); err != nil {
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
		if ttl := rdb.PTTL(ctx, g).Val(); ttl <= 0 || ttl > guardTTL {
			t.Fatalf("guard %s of a finished transfer has TTL %v; want within (0, %v]", g, ttl, guardTTL)
		}
	}

	lost := ref{item: item, id: 8, from: 0, to: 4, qty: 1, token: 1000}
	if r, err := transferIn(ctx, rdb, lost); err != nil || r != stepNoStock {
		t.Fatalf("in to a bucket without a stock key = %q, %v; want nostock", r, err)
	}
	if err := rdb.Set(ctx, stock.BucketKeys(item, 4).Stock, 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r, _ := transferIn(ctx, rdb, lost); r != stepSeen {
		t.Fatalf("in after the bucket was warmed = %q; want seen (MySQL's copy holds the qty)", r)
	}
	if got := stocksOf(t, s, item, 5)[4]; got != 0 {
		t.Fatalf("bucket 4 = %d; want 0", got)
	}
}
