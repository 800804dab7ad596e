package stock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

func warmItem(t *testing.T, s *stock.Store, units int64, limit int) int64 {
	t.Helper()
	id := testenv.ItemID()
	now := time.Now()
	err := s.Warm(context.Background(), stock.Snapshot{ItemID: id, Stock: units, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PerUserLimit: limit})
	if err != nil {
		t.Fatalf("warm: %v", err)
	}
	return id
}

func admit(t *testing.T, s *stock.Store, item, user int64, qty int, idem string) stock.AdmitResult {
	t.Helper()
	r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: user, Qty: qty,
		RequestID: reqid.New(item, time.Now()), Now: time.Now(), IdempotencyKey: idem, IdempotencyTTL: time.Minute})
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	return r
}

func TestAdmitVerdicts(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 3, 2)

	if r := admit(t, s, item, 1, 3, ""); r.Code != stock.OverLimit || r.Limit != 2 {
		t.Fatalf("qty over limit: %+v", r)
	}
	if r := admit(t, s, item, 1, 2, ""); r.Code != stock.Admitted || r.StockLeft != 1 {
		t.Fatalf("first: %+v", r)
	}
	if r := admit(t, s, item, 1, 1, ""); r.Code != stock.Already {
		t.Fatalf("same buyer: %+v", r)
	}
	if r := admit(t, s, item, 2, 2, ""); r.Code != stock.SoldOut || r.StockLeft != 1 {
		t.Fatalf("not enough: %+v", r)
	}
	if r := admit(t, s, item, 2, 1, ""); r.Code != stock.Admitted || r.StockLeft != 0 {
		t.Fatalf("last unit: %+v", r)
	}
	if r := admit(t, s, item, 3, 1, ""); r.Code != stock.SoldOut {
		t.Fatalf("sold out: %+v", r)
	}
	if r := admit(t, s, testenv.ItemID(), 3, 1, ""); r.Code != stock.Unknown {
		t.Fatalf("unwarmed item must be unknown, never admitted: %+v", r)
	}
	st, err := s.ReadState(ctx, item)
	if err != nil || st.Stock != 0 || st.Pending != 2 || st.PendingQty != 3 || st.Buyers != 2 {
		t.Fatalf("state %+v %v", st, err)
	}

	// Outside the window.
	closed := testenv.ItemID()
	now := time.Now()
	if err := s.Warm(ctx, stock.Snapshot{ItemID: closed, Stock: 5, StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), PerUserLimit: 1}); err != nil {
		t.Fatal(err)
	}
	if r := admit(t, s, closed, 1, 1, ""); r.Code != stock.NotActive {
		t.Fatalf("not active: %+v", r)
	}
}

func TestReleaseIsAtMostOnce(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 5, 1)
	rid := reqid.New(item, time.Now())
	r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, UserID: 7, Qty: 1, RequestID: rid, Now: time.Now(), IdempotencyKey: "k1", IdempotencyTTL: time.Minute})
	if err != nil || r.Code != stock.Admitted {
		t.Fatalf("admit %+v %v", r, err)
	}
	var released atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.Release(ctx, item, rid, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true, UserID: 7, IdempotencyKey: "k1"})
			if err != nil {
				t.Error(err)
			}
			if ok {
				released.Add(1)
			}
		}()
	}
	wg.Wait()
	if released.Load() != 1 {
		t.Fatalf("released %d times, want 1", released.Load())
	}
	st, _ := s.ReadState(ctx, item)
	if st.Stock != 5 || st.Pending != 0 || st.Buyers != 0 {
		t.Fatalf("state after release %+v", st)
	}
	// The Idempotency-Key answer is gone, so the buyer may retry afresh.
	if r := admit(t, s, item, 7, 1, "k1"); r.Code != stock.Admitted {
		t.Fatalf("retry after release: %+v", r)
	}
}

func TestIdempotencyReplayAdmitsOnce(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	item := warmItem(t, s, 100, 1)
	var admitted, replays atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch r := admit(t, s, item, 42, 1, "same-key"); r.Code {
			case stock.Admitted:
				admitted.Add(1)
			case stock.ReplayUnacked: // nobody acked the first publish in this test
				replays.Add(1)
			default:
				t.Errorf("unexpected %+v", r)
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 1 || replays.Load() != 49 {
		t.Fatalf("admitted %d replays %d", admitted.Load(), replays.Load())
	}
}

func TestConcurrentAdmissionNeverOversells(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 100, 1)
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for u := range 2000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := admit(t, s, item, int64(u%1000+1), 1, ""); r.Code == stock.Admitted {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	st, err := s.ReadState(ctx, item)
	if err != nil {
		t.Fatal(err)
	}
	if admitted.Load() != 100 || st.Stock != 0 || st.Pending != 100 || st.Buyers != 100 {
		t.Fatalf("admitted %d, state %+v", admitted.Load(), st)
	}
}

func TestRestoreOncePerOrder(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 0, 1)
	for i := range 3 {
		res, err := s.Restore(ctx, item, 0, "r-99", 2)
		if err != nil {
			t.Fatal(err)
		}
		want := stock.RestoreSeen
		if i == 0 {
			want = stock.RestoreApplied
		}
		if res != want {
			t.Fatalf("restore #%d = %v, want %v", i, res, want)
		}
	}
	if n, _, _ := s.Stock(ctx, item); n != 2 {
		t.Fatalf("stock %d, want 2", n)
	}
	if res, err := s.Restore(ctx, testenv.ItemID(), 0, "r-1", 1); err != nil || res != stock.RestoreNoStock {
		t.Fatalf("restore into a lost item = %v, %v", res, err)
	}
}

func TestWarmRefusesWhilePendingAndGuardsRestores(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 10, 1)
	admit(t, s, item, 1, 1, "")
	now := time.Now()
	snap := stock.Snapshot{ItemID: item, Stock: 10, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1,
		Buyers: []stock.Holder{{UserID: 5, RequestID: "r-5"}, {UserID: 6, RequestID: "r-6"}}, UnappliedRestores: []stock.RestoreRef{{RequestID: "r-77"}}}
	if err := s.Warm(ctx, snap); !errors.Is(err, stock.ErrPending) {
		t.Fatalf("warm with pending reservation: %v", err)
	}
	// Redis lost the item: warm proceeds, and the restore it already counts is guarded.
	if err := s.Client().Del(ctx, stock.KeysOf(item).Stock).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Warm(ctx, snap); err != nil {
		t.Fatalf("warm after loss: %v", err)
	}
	if res, _ := s.Restore(ctx, item, 0, "r-77", 3); res != stock.RestoreSeen {
		t.Fatalf("restore counted by the snapshot applied again: %v", res)
	}
	st, _ := s.ReadState(ctx, item)
	if st.Stock != 10 || st.Buyers != 2 || st.Pending != 0 {
		t.Fatalf("state %+v", st)
	}
}

func TestRedisDownIsUnavailable(t *testing.T) {
	t.Parallel()
	r := testenv.StartPrivateRedis(t)
	s := stock.New(r.Client(300 * time.Millisecond))
	item := warmItem(t, s, 1, 1)
	r.Stop()
	start := time.Now()
	_, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: 1, Qty: 1, RequestID: reqid.New(item, time.Now()), Now: time.Now()})
	if !errors.Is(err, stock.ErrUnavailable) {
		t.Fatalf("admit with Redis down: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("admit with Redis down took %v", d)
	}
}
