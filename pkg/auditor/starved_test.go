package auditor_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auditor"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// An item of 100 buckets (FLASHSALE_MAX_BUCKETS allows 1000): per-bucket
// series stop at auditor.MaxBuckets, but the per-item aggregates cover every
// bucket. Buckets 10 and 80 are empty and wanted: two starved buckets, the
// one above 64 included, and they stay counted after the 2 s want flag
// expired (seen within StarvedWindow) until their stock comes back. An open
// transfer is counted and aged by MySQL's clock.
func TestAuditorCoversEveryBucket(t *testing.T) {
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	st := stock.New(rdb)
	cat := catalog.New(db, st, testenv.NoLag)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	const n = 100
	id := testenv.ItemID()
	if _, err := cat.Put(ctx, store.Item{ID: id, Name: "wide", PriceCents: 1, TotalStock: n, PerUserLimit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: n}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []int{10, 80} {
		u := testenv.UserIn(b, n, 1)
		r, err := st.Admit(ctx, stock.AdmitRequest{ItemID: id, Buckets: n, Bucket: b, UserID: u, Qty: 1,
			RequestID: reqid.NewIn(id, b, time.Now()), Now: time.Now()})
		if err != nil || r.Code != stock.Admitted {
			t.Fatalf("admit in bucket %d: %+v, %v", b, r, err)
		}
		if err := rdb.Set(ctx, stock.BucketKeys(id, b).Want, "1", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	a := newAuditor(db, st, reg)
	item := strconv.FormatInt(id, 10)
	gauge := func(name string) float64 {
		t.Helper()
		return testenv.Metric(t, reg, name, "item", item)
	}
	pass := func() {
		t.Helper()
		if err := a.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	if got := gauge("flashsale_bucket_starved_buckets"); got != 2 {
		t.Errorf("starved buckets = %v; want 2 (buckets 10 and 80)", got)
	}
	if got := gauge("flashsale_bucket_empty_buckets"); got != 2 {
		t.Errorf("empty buckets = %v; want 2", got)
	}
	if got := gauge("flashsale_stock_transfers_open"); got != 0 {
		t.Errorf("open transfers = %v; want 0", got)
	}
	if got := bucketSeries(t, reg, id); got != auditor.MaxBuckets*5+1 {
		t.Errorf("item of %d buckets has %d bucket series; want %d (per-bucket series only below MaxBuckets)", n, got, auditor.MaxBuckets*5+1)
	}

	// The flags expire (they live 2 s): the buckets are still starved.
	for _, b := range []int{10, 80} {
		if err := rdb.Del(ctx, stock.BucketKeys(id, b).Want).Err(); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	if got := gauge("flashsale_bucket_starved_buckets"); got != 2 {
		t.Errorf("starved buckets after the flags expired = %v; want still 2", got)
	}
	// Bucket 80 gets a unit (as a transfer gives it): no longer starved.
	if err := rdb.IncrBy(ctx, stock.BucketKeys(id, 80).Stock, 1).Err(); err != nil {
		t.Fatal(err)
	}
	pass()
	if got := gauge("flashsale_bucket_starved_buckets"); got != 1 {
		t.Errorf("starved buckets after bucket 80 got stock = %v; want 1", got)
	}

	tr, err := rebalance.PlanTransfer(ctx, db, id, n, 0, 90, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE stock_transfers SET created_at = NOW(3) - INTERVAL 10 MINUTE WHERE id = ?", tr.ID); err != nil {
		t.Fatal(err)
	}
	pass()
	if got := gauge("flashsale_stock_transfers_open"); got != 1 {
		t.Errorf("open transfers = %v; want 1", got)
	}
	if got := gauge("flashsale_stock_transfer_oldest_open_age_seconds"); got < 600 {
		t.Errorf("oldest open transfer age = %v s; want at least 600", got)
	}
}
