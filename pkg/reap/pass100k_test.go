//go:build reapbench

package reap_test

import (
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/reap"
)

// One pass over 100,000 expired orders (10 items), measured and logged.
// Behind the reapbench tag because it takes longer than the default suite
// should:
//
//	go test -race=false -tags reapbench -run Pass100k -v ./pkg/reap/
func TestPass100kExpiredOrders(t *testing.T) {
	e := newEnv(t)
	const items, perItem = 10, 10_000
	var its []item
	start := time.Now()
	for i := range items {
		orders := make([]order, perItem)
		for j := range orders {
			orders[j] = order{UserID: int64(i*perItem + j + 1), Qty: 1, ExpiresIn: -time.Duration(1+j%600) * time.Second}
		}
		its = append(its, e.newItem(perItem+10, orders))
	}
	t.Logf("fixture: %d orders in %v", items*perItem, time.Since(start).Round(time.Millisecond))

	for _, batch := range []int{500} {
		r, reg := e.newReaper(reap.Config{BatchSize: batch})
		ctx := testCtx(t, 30*time.Minute)
		start = time.Now()
		if !r.RunPass(ctx) {
			t.Fatal("pass failed")
		}
		d := time.Since(start)
		if got := metric(t, reg, "flashsale_reaper_cancellations_total"); got != items*perItem {
			t.Fatalf("cancelled %v in one pass, want %d", got, items*perItem)
		}
		t.Logf("one pass over %d expired orders, batch %d (Redis restores pipelined per batch): %v (%.0f orders/s)",
			items*perItem, batch, d.Round(time.Millisecond), float64(items*perItem)/d.Seconds())
	}
	for _, it := range its {
		if got := e.redisStock(it.ID); got != it.Total {
			t.Errorf("item %d Redis stock = %d, want %d", it.ID, got, it.Total)
		}
		if got := e.dbStock(it.ID); got != it.Total {
			t.Errorf("item %d MySQL stock = %d, want %d", it.ID, got, it.Total)
		}
	}
	if n := e.count("SELECT COUNT(*) FROM stock_restores WHERE redis_applied_at IS NULL"); n != 0 {
		t.Errorf("%d restores left pending", n)
	}
}
