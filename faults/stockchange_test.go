//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestStockChangeIngressKilled: restocks and withdraws sent while buyers
// buy, the ingress that applies them SIGKILLed a random moment (0-4 ms)
// after each is sent, so some kills land between a change's MySQL record
// and its Redis step (a row left PENDING). The reaper finishes those; at
// quiescence every change is APPLIED once: MySQL's total is the initial
// stock plus the units the rows say were applied, and the audit (I1-I7,
// Redis included) is exact, so Redis changed once per change too.
//
// The history check's total is the initial stock plus every restock (the
// most the item ever held: withdraws only lower it), a weaker but still
// sound bound on the units buyers may hold at once.
func TestStockChangeIngressKilled(t *testing.T) {
	start := time.Now()
	cfg := defaultSettings()
	cfg.Units = 120
	p := newPipeline(t, cfg)
	p.startAll()
	p.createItem()
	w := p.start(burst(pick(300, 800), 40))
	waitAccepted(t, w, 10)
	ctx := context.Background()
	pendingRows := func() int64 {
		var n int64
		if err := p.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM stock_changes WHERE item_id = ? AND state = 'PENDING'", p.itemID).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	var restocked int64
	kills, caught := 0, 0
	for i := range pick(40, 120) {
		delta := int64(5)
		if i%3 == 2 {
			delta = -4
		} else {
			restocked += delta
		}
		body := map[string]any{"delta": delta, "operation_id": fmt.Sprintf("kill-%d-%d", p.itemID, i)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			p.call(cctx, http.MethodPost, p.itemPath("/stock"), p.admin, body, nil) // the answer may be lost: that is the fault
		}()
		hold(time.Duration(rand.IntN(4000)) * time.Microsecond)
		p.ingress.kill()
		kills++
		<-done
		if pendingRows() > 0 {
			caught++
		}
		p.ingress.start()
		if caught >= pick(3, 10) && i >= 10 {
			break
		}
	}
	t.Logf("ingress SIGKILLed %d times during a stock change; %d left a change PENDING (recorded in MySQL, not finished)", kills, caught)
	if caught == 0 {
		t.Errorf("no kill landed between a change's MySQL record and its end: the fault was not exercised")
	}
	testenv.Eventually(t, time.Minute, 50*time.Millisecond, func() bool { return pendingRows() == 0 },
		"the reaper did not finish the stock changes the killed ingress left PENDING")
	var applied, total int64
	if err := p.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(applied), 0) FROM stock_changes WHERE item_id = ?", p.itemID).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if err := p.db.QueryRowContext(ctx, "SELECT total_stock FROM items WHERE id = ?", p.itemID).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != int64(cfg.Units)+applied {
		t.Errorf("total_stock %d != initial %d + applied %d: a change was applied more or less than once in MySQL", total, cfg.Units, applied)
	}
	p.cfg.Units += int(restocked)
	rep := p.settle(fmt.Sprintf("ingress SIGKILL x%d during stock changes (%d left PENDING)", kills, caught), start, w)
	if rep.direct.Total != total {
		t.Errorf("audit total %d, MySQL %d", rep.direct.Total, total)
	}
}
