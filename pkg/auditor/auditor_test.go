package auditor_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// The auditor exports the stores' stock and flags drift: MySQL and Redis
// agree at first (drift 0, no violation); then Redis loses a unit that
// MySQL still has, and the drift gauge and the violation count show it
// after one pass: the confirmation (confirm.go) that keeps a unit caught
// between the stores mid-sale quiet does not hide a unit out of place.
func TestAuditorReportsDrift(t *testing.T) {
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	ctx := context.Background()
	id := testenv.ItemID()
	createItem(t, db, st, id, 10)
	reg := prometheus.NewPedanticRegistry()
	a := newAuditor(db, st, reg)
	item := strconv.FormatInt(id, 10)

	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	gauge := func(name string, labels ...string) float64 {
		t.Helper()
		return testenv.Metric(t, reg, name, labels...)
	}
	if d := gauge("flashsale_stock_drift_units", "item", item); d != 0 {
		t.Fatalf("drift %v with agreeing stores", d)
	}
	if v := gauge("flashsale_audit_violations", "item", item); v != 0 {
		t.Fatalf("violations %v with agreeing stores", v)
	}
	if n, err := testutil.GatherAndCount(reg, "flashsale_audit_reported_total"); err != nil || n != 0 {
		t.Fatalf("%d series of reported violations with agreeing stores (%v), want none", n, err)
	}

	if err := st.Client().DecrBy(ctx, stock.KeysOf(id).Stock, 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if d := gauge("flashsale_stock_drift_units", "item", item); d != -1 {
		t.Fatalf("drift %v, want -1", d)
	}
	if v := gauge("flashsale_audit_violations", "item", item); v < 1 {
		t.Fatalf("violations %v, want at least 1", v)
	}
	if n := gauge("flashsale_audit_reported_total", "item", item); n != 1 {
		t.Fatalf("%v violations reported after the pass that found the planted one, want 1", n)
	}
	if r := gauge("flashsale_stock_units", "item", item, "store", "redis"); r != 9 {
		t.Fatalf("redis stock gauge %v", r)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
