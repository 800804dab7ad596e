package auditor_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auditor"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// An item that falls out of the watched set (MaxItems newer sales started)
// loses every series of its own: a gauge nobody updates any more
// would keep an alert firing, or silent, on a number that is no longer true.
func TestAuditorForgetsItemsLeavingTheWatchedSet(t *testing.T) {
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	old := testenv.ItemID()
	createItem(t, db, st, old, 10)
	reg := prometheus.NewPedanticRegistry()
	a := newAuditor(db, st, reg)
	ctx := context.Background()
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if n := seriesOf(t, reg, old); n == 0 {
		t.Fatalf("no series of item %d after its audit", old)
	}
	for i := range int64(auditor.MaxItems) {
		createItem(t, db, st, old+1+i, 10)
	}
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if n := seriesOf(t, reg, old); n != 0 {
		t.Fatalf("item %d left the %d watched items but still has %d series", old, auditor.MaxItems, n)
	}
	if n := seriesOf(t, reg, old+1); n == 0 {
		t.Fatalf("no series of watched item %d", old+1)
	}
}

// One item whose Redis state cannot be read (a malformed reservation) is
// counted and skipped; the other items of the pass are still audited, and
// the pass is not reported as complete.
func TestAuditorSkipsAFailingItem(t *testing.T) {
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	good := testenv.ItemID()
	bad := good + 1 // audited first: started last, and the pass lists the newest sales first
	createItem(t, db, st, good, 10)
	createItem(t, db, st, bad, 10)
	ctx := context.Background()
	if err := st.Client().HSet(ctx, stock.KeysOf(bad).Reservations, "r-bad", "not-a-reservation").Err(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	a := newAuditor(db, st, reg)
	err := a.Pass(ctx)
	if err == nil {
		t.Errorf("pass with a failing item reported no error")
	}
	if s := testenv.Metric(t, reg, "flashsale_stock_units", "item", strconv.FormatInt(good, 10), "store", "mysql"); s != 10 {
		t.Fatalf("good item's MySQL stock gauge %v, want 10", s)
	}
	if n := testenv.Metric(t, reg, "flashsale_audit_item_failures_total"); n != 1 {
		t.Fatalf("item failures %v, want 1", n)
	}
	if ts := testenv.Metric(t, reg, "flashsale_audit_last_success_timestamp_seconds"); ts != 0 {
		t.Fatalf("last success %v after a pass that skipped an item", ts)
	}
}

// The age of an item's oldest pending reservation, by Redis' clock: 0 with
// none, about 90s for one reserved 90s ago, 0 again once it is gone.
func TestAuditorExportsOldestReservationAge(t *testing.T) {
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	id := testenv.ItemID()
	createItem(t, db, st, id, 10)
	reg := prometheus.NewPedanticRegistry()
	a := newAuditor(db, st, reg)
	ctx := context.Background()
	item := strconv.FormatInt(id, 10)
	age := func() float64 {
		t.Helper()
		if err := a.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		return testenv.Metric(t, reg, "flashsale_oldest_reservation_age_seconds", "item", item)
	}
	if v := age(); v != 0 {
		t.Fatalf("age %v with no reservation", v)
	}

	now, err := st.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, rid := range []string{"r-old", "r-new"} {
		res, err := st.Admit(ctx, stock.AdmitRequest{ItemID: id, UserID: int64(i + 1), Qty: 1, RequestID: rid, Now: now})
		if err != nil || res.Code != stock.Admitted {
			t.Fatalf("admit: %+v %v", res, err)
		}
	}
	// Age one of them by 90s, as if it had waited that long.
	back := fmt.Sprintf("1:1:%d", now.Add(-90*time.Second).UnixMilli())
	if err := st.Client().HSet(ctx, stock.KeysOf(id).Reservations, "r-old", back).Err(); err != nil {
		t.Fatal(err)
	}
	if v := age(); v < 90 || v > 120 {
		t.Fatalf("age %v, want about 90s", v)
	}

	if err := st.Client().Del(ctx, stock.KeysOf(id).Reservations).Err(); err != nil {
		t.Fatal(err)
	}
	if v := age(); v != 0 {
		t.Fatalf("age %v after every reservation is gone", v)
	}
}

func newAuditor(db *sql.DB, st *stock.Store, reg prometheus.Registerer) *auditor.Auditor {
	return &auditor.Auditor{DB: db, Stock: st, Interval: time.Second, Metrics: auditor.NewMetrics(reg),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// createItem creates a live sale of units: started a minute ago, for an hour.
func createItem(t *testing.T, db *sql.DB, st *stock.Store, id, units int64) {
	t.Helper()
	now := time.Now().UTC()
	createSale(t, db, st, id, units, now.Add(-time.Minute), now.Add(time.Hour))
}

// createSale creates item id with units on sale from starts to ends, in
// MySQL and warmed in Redis.
func createSale(t *testing.T, db *sql.DB, st *stock.Store, id, units int64, starts, ends time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `INSERT INTO items (id, name, price_cents, total_stock, stock, per_user_limit, starts_at, ends_at)
		VALUES (?, 'audited', 100, ?, ?, 1, ?, ?)`, id, units, units, starts, ends); err != nil {
		t.Fatal(err)
	}
	if err := st.Warm(ctx, stock.Snapshot{ItemID: id, Stock: units, StartsAt: starts, EndsAt: ends, PerUserLimit: 1}); err != nil {
		t.Fatal(err)
	}
}

// seriesOf counts the series in reg that carry item="id".
func seriesOf(t *testing.T, reg prometheus.Gatherer, id int64) int {
	t.Helper()
	return seriesWhere(t, reg, id, nil)
}

// seriesWhere counts the series in reg that carry item="id" and, unless
// match is nil, that match says to count.
func seriesWhere(t *testing.T, reg prometheus.Gatherer, id int64, match func(*dto.MetricFamily, *dto.Metric) bool) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	item := strconv.FormatInt(id, 10)
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if hasItem(m, item) && (match == nil || match(mf, m)) {
				n++
			}
		}
	}
	return n
}

func hasItem(m *dto.Metric, item string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == "item" && l.GetValue() == item {
			return true
		}
	}
	return false
}
