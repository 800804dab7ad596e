package reap_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stockchange"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestPassFinishesPendingStockChanges: a restock and a withdraw stopped
// after their MySQL record (the ingress killed there) are finished by the
// reaper's pass, once: a second pass changes nothing.
func TestPassFinishesPendingStockChanges(t *testing.T) {
	e := newEnv(t)
	ctx := testCtx(t, time.Minute)
	up, down := e.newItem(100, nil), e.newItem(100, nil)
	ch := stockchange.New(e.db, e.st, 2*time.Second, testenv.LogTail(t))
	crash := errors.New("crash")
	ch.AfterRecord = func(context.Context, store.StockChange) error { return crash }
	if _, err := ch.Change(ctx, up.ID, 50, "up-"+testenv.Suffix()); !errors.Is(err, crash) {
		t.Fatal(err)
	}
	if _, err := ch.Change(ctx, down.ID, -30, "down-"+testenv.Suffix()); !errors.Is(err, crash) {
		t.Fatal(err)
	}
	r, _ := e.newReaper(reap.Config{})
	for pass := range 2 {
		if err := r.Pass(ctx); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		for _, c := range []struct {
			id   int64
			want int64
		}{{up.ID, 150}, {down.ID, 70}} {
			e.auditOK(c.id)
			rep, err := audit.Item(ctx, e.db, e.st, c.id)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK || rep.Total != c.want || rep.RedisStock != c.want {
				t.Fatalf("pass %d item %d: total %d redis %d (want %d), violations %v", pass, c.id, rep.Total, rep.RedisStock, c.want, rep.Violations)
			}
		}
	}
}
