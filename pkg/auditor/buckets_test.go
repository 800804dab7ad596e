package auditor_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// A bucketed item's buckets get gauges of their own, labelled by bucket
// index: each store's stock, the pending units, the drift, and the want
// flag a buyer raised on finding their bucket empty; an unbucketed item
// gets none. A bucket the item no longer has (re-bucketed between sales)
// loses its series.
func TestAuditorExportsBuckets(t *testing.T) {
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	cat := catalog.New(db, st, testenv.NoLag)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	start := now.Add(-time.Minute)
	put := func(id, total int64, buckets int) {
		t.Helper()
		if _, err := cat.Put(ctx, store.Item{ID: id, Name: "buckets", PriceCents: 100, TotalStock: total, PerUserLimit: 1,
			StartsAt: start, EndsAt: start.Add(time.Hour), Buckets: buckets}); err != nil {
			t.Fatal(err)
		}
	}
	hot, plain := testenv.ItemID(), testenv.ItemID()
	put(hot, 4, 4) // one unit per bucket
	put(plain, 4, 1)

	// Two buyers of bucket 2: the first takes its unit, the second finds
	// it empty, which raises the bucket's want flag.
	var first string
	for u, admitted := int64(1), 0; admitted < 2; u++ {
		if stock.HomeBucket(u, 4) != 2 {
			continue
		}
		rid := reqid.NewIn(hot, 2, time.Now())
		r, err := st.Admit(ctx, stock.AdmitRequest{ItemID: hot, Buckets: 4, Bucket: 2, UserID: u, Qty: 1, RequestID: rid, Now: time.Now()})
		want := map[int]stock.AdmitCode{0: stock.Admitted, 1: stock.SoldOut}[admitted]
		if err != nil || r.Code != want {
			t.Fatalf("buyer %d of bucket 2: %+v %v, want %s", admitted, r, err, want)
		}
		if admitted == 0 {
			first = rid
		}
		admitted++
	}

	reg := prometheus.NewPedanticRegistry()
	a := newAuditor(db, st, reg)
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	item := strconv.FormatInt(hot, 10)
	gauge := func(name string, labels ...string) float64 {
		t.Helper()
		return testenv.Metric(t, reg, name, append([]string{"item", item}, labels...)...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"flashsale_bucket_stock_units", []string{"bucket", "2", "store", "redis"}, 0},
		{"flashsale_bucket_stock_units", []string{"bucket", "2", "store", "mysql"}, 1},
		{"flashsale_bucket_stock_units", []string{"bucket", "3", "store", "redis"}, 1},
		{"flashsale_bucket_pending_units", []string{"bucket", "2"}, 1},
		{"flashsale_bucket_stock_drift_units", []string{"bucket", "2"}, 0},
		{"flashsale_bucket_wanted", []string{"bucket", "2"}, 1},
		{"flashsale_bucket_wanted", []string{"bucket", "0"}, 0},
		{"flashsale_stock_transfers_done", nil, 0},
		{"flashsale_audit_violations", nil, 0},
	} {
		if got := gauge(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := bucketSeries(t, reg, hot); n != 4*5+1 {
		t.Errorf("item of 4 buckets has %d bucket series, want 21 (per bucket stock x2, pending, drift, wanted; the transfer counter)", n)
	}
	if n := bucketSeries(t, reg, plain); n != 0 {
		t.Errorf("unbucketed item has %d bucket series", n)
	}

	// Between sales (a count change is refused during one): 2 buckets,
	// then 1.
	if _, err := st.Release(ctx, hot, first, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil {
		t.Fatal(err)
	}
	start = now.Add(24 * time.Hour)
	put(hot, 4, 4)
	put(hot, 4, 2)
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if n := bucketSeries(t, reg, hot); n != 2*5+1 {
		t.Errorf("item re-bucketed to 2 has %d bucket series, want 11", n)
	}
	if got := gauge("flashsale_bucket_stock_units", "bucket", "1", "store", "redis"); got != 2 {
		t.Errorf("bucket 1 of 2 has %v units in Redis, want 2", got)
	}
	put(hot, 4, 1)
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if n := bucketSeries(t, reg, hot); n != 0 {
		t.Errorf("item re-bucketed to 1 still has %d bucket series", n)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// bucketSeries counts id's series that carry a bucket label, and its
// transfer counter.
func bucketSeries(t *testing.T, reg prometheus.Gatherer, id int64) int {
	t.Helper()
	return seriesWhere(t, reg, id, func(mf *dto.MetricFamily, m *dto.Metric) bool {
		return hasLabelName(m, "bucket") || mf.GetName() == "flashsale_stock_transfers_done"
	})
}

func hasLabelName(m *dto.Metric, name string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return true
		}
	}
	return false
}
