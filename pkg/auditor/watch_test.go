package auditor_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auditor"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// The auditor watches the sales that can still change, whatever their ids:
// a live sale, and one that ended less than Settle ago (its orders are
// still being paid or reaped), but not one whose sale ended long before.
// Item ids are the operator's (or random), not a clock: when the watched
// set was the MaxItems highest ids, a new sale with a low id went
// unaudited behind old ones, and every ended sale among the highest ids
// was audited again every pass for good, each audit reading all its orders.
func TestAuditorWatchesSalesThatCanStillChange(t *testing.T) {
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	now := time.Now().UTC()
	live := testenv.ItemID()
	createSale(t, db, st, live, 10, now.Add(-time.Minute), now.Add(time.Hour))
	justEnded := live + 1
	createSale(t, db, st, justEnded, 10, now.Add(-time.Hour), now.Add(-time.Minute))
	var longEnded []int64
	for i := range int64(auditor.MaxItems) {
		id := live + 2 + i
		createSale(t, db, st, id, 10, now.Add(-3*time.Hour), now.Add(-2*time.Hour))
		longEnded = append(longEnded, id)
	}
	reg := prometheus.NewPedanticRegistry()
	a := newAuditor(db, st, reg)
	a.Settle = 10 * time.Minute
	if err := a.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := seriesOf(t, reg, live); n == 0 {
		t.Errorf("live sale %d not audited (it has the lowest id)", live)
	}
	if n := seriesOf(t, reg, justEnded); n == 0 {
		t.Errorf("sale %d, ended a minute ago with a 10m settle, not audited", justEnded)
	}
	for _, id := range longEnded {
		if n := seriesOf(t, reg, id); n != 0 {
			t.Fatalf("sale %d ended two hours ago, still audited (%d series)", id, n)
		}
	}
}

// An ended sale is audited until an audit finds it settled (nothing
// reserved or unpaid, every invariant holding), then no more: a unit
// planted out of place afterwards does not move its gauges. An ended sale
// with a reservation still waiting for its outcome is not settled, and
// the same planted unit shows in its next audit; so does it in a settled
// sale an operator reopens.
func TestAuditorStopsAuditingASettledSale(t *testing.T) {
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	ctx := context.Background()
	now := time.Now().UTC()
	quiet, busy := testenv.ItemID(), testenv.ItemID()
	createSale(t, db, st, quiet, 10, now.Add(-time.Hour), now.Add(-time.Minute))
	createSale(t, db, st, busy, 10, now.Add(-time.Minute), now.Add(time.Hour))
	redisNow, err := st.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if res, err := st.Admit(ctx, stock.AdmitRequest{ItemID: busy, UserID: 1, Qty: 1, RequestID: "r-busy", Now: redisNow}); err != nil || res.Code != stock.Admitted {
		t.Fatalf("admit: %+v %v", res, err)
	}
	// The busy sale ends with its reservation still pending.
	if _, err := db.ExecContext(ctx, "UPDATE items SET ends_at = ? WHERE id = ?", now.Add(-time.Second), busy); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	a := newAuditor(db, st, reg)
	a.Settle = 10 * time.Minute
	drift := func(id int64) float64 {
		t.Helper()
		return testenv.Metric(t, reg, "flashsale_stock_drift_units", "item", strconv.FormatInt(id, 10))
	}
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if d, e := drift(quiet), drift(busy); d != 0 || e != 0 {
		t.Fatalf("drift %v and %v with agreeing stores", d, e)
	}
	for _, id := range []int64{quiet, busy} {
		if err := st.Client().DecrBy(ctx, stock.KeysOf(id).Stock, 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if d := drift(quiet); d != 0 {
		t.Errorf("settled sale audited again: drift %v", d)
	}
	if d := drift(busy); d != -1 {
		t.Errorf("ended sale with a pending reservation not audited again: drift %v, want -1", d)
	}

	// An operator reopens the settled sale (its end moved ahead): it is
	// live again, loses its settled mark, and the planted unit shows.
	if _, err := db.ExecContext(ctx, "UPDATE items SET ends_at = ? WHERE id = ?", now.Add(time.Hour), quiet); err != nil {
		t.Fatal(err)
	}
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if d := drift(quiet); d != -1 {
		t.Errorf("reopened sale not audited again: drift %v, want -1", d)
	}
}
