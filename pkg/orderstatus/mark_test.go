package orderstatus_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestMarkInDoubt: the pay's in-doubt marker replaces a cached UNPAID (or
// nothing) and outranks any later UNPAID, never replaces a final status,
// is not written for a request still pending, reads as a miss for GetStatus
// and as InDoubt for LookupRequest, and a final status replaces it.
func TestMarkInDoubt(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := orderstatus.NewStore(stock.New(rdb))
	ctx := context.Background()
	item := testenv.ItemID()
	mark := func(rid string, want orderstatus.MarkResult) {
		t.Helper()
		if got, err := s.MarkInDoubt(ctx, item, rid); err != nil || got != want {
			t.Fatalf("mark %s: %q %v, want %q", rid, got, err, want)
		}
	}
	lookup := func(rid string) orderstatus.Lookup {
		t.Helper()
		lk, err := s.LookupRequest(ctx, item, rid)
		if err != nil {
			t.Fatal(err)
		}
		return lk
	}
	put := func(rid string, rank orderstatus.StatusRank, js string) {
		t.Helper()
		if err := s.PutStatus(ctx, item, rid, rank, []byte(js)); err != nil {
			t.Fatal(err)
		}
	}

	unpaid := reqid.New(item, time.Now())
	put(unpaid, orderstatus.RankUnpaid, `{"status":"UNPAID"}`)
	mark(unpaid, orderstatus.Marked)
	if lk := lookup(unpaid); !lk.InDoubt || lk.Status != nil {
		t.Fatalf("after the mark: %+v, want in doubt", lk)
	}
	if _, ok, err := s.GetStatus(ctx, item, unpaid); ok || err != nil {
		t.Fatalf("GetStatus of the marker: ok %v %v, want a miss", ok, err)
	}
	if ttl := rdb.PTTL(ctx, stock.KeysOf(item).Status(unpaid)).Val(); ttl <= 5*time.Second || ttl > orderstatus.InDoubtTTL {
		t.Fatalf("marker lives %v, want more than UNPAID's 5 s and at most %v", ttl, orderstatus.InDoubtTTL)
	}
	put(unpaid, orderstatus.RankUnpaid, `{"status":"UNPAID","late":true}`) // a fill from a read before the commit
	if lk := lookup(unpaid); !lk.InDoubt {
		t.Fatalf("a late UNPAID replaced the marker: %+v", lk)
	}
	mark(unpaid, orderstatus.Marked) // a second pay
	put(unpaid, orderstatus.RankFinal, `{"status":"PAID"}`)
	if lk := lookup(unpaid); lk.InDoubt || string(lk.Status) != `{"status":"PAID"}` {
		t.Fatalf("PAID did not replace the marker: %+v %s", lk, lk.Status)
	}
	mark(unpaid, orderstatus.MarkFinal)
	if lk := lookup(unpaid); string(lk.Status) != `{"status":"PAID"}` {
		t.Fatalf("a mark replaced a final status: %+v %s", lk, lk.Status)
	}

	absent := reqid.New(item, time.Now())
	mark(absent, orderstatus.Marked)
	if lk := lookup(absent); !lk.InDoubt {
		t.Fatalf("no marker where nothing was cached: %+v", lk)
	}

	pending := reqid.New(item, time.Now())
	if err := rdb.HSet(ctx, stock.RequestKeys(item, pending).Reservations, pending, "7:1:0").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.HDel(context.Background(), stock.RequestKeys(item, pending).Reservations, pending) })
	mark(pending, orderstatus.MarkPending)
	if v := rdb.Exists(ctx, stock.KeysOf(item).Status(pending)).Val(); v != 0 {
		t.Fatalf("a pending request was marked")
	}
}
