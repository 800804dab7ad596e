package auditor_test

import (
	"context"
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
