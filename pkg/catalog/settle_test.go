package catalog_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The rebalancer plans a transfer between a PUT's commit and the warm that
// follows it (the contract run of 2026-12-08 met it: POST .../end, then a
// PUT with a new stock, answered 503 not_warmed). A transfer finishes in
// milliseconds, so Put must wait for it and warm, not give up: the PUT
// answers 200, and Redis holds what MySQL holds, bucket by bucket.
//
// The transfer is planned in the moment after the commit, and driven to
// its end only once the warm has been refused for it (its transaction
// rolled back), so the refusal is met every run.
func TestPutWaitsForTransferPlannedAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	plain, dsn := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	var armed, planned, refused atomic.Bool
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	id := testenv.ItemID()
	mover := rebalance.New(rebalance.Config{StoreTimeout: 5 * time.Second}, rebalance.Deps{DB: plain, Redis: rdb},
		rebalance.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
	db := testenv.MySQLVia(t, dsn, func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &sqlWatch{Conn: c,
			onCommit: func() {
				// The rebalancer, once the PUT has committed: the plan
				// waits on the item's row lock until the COMMIT has run.
				if armed.Load() && planned.CompareAndSwap(false, true) {
					if _, err := rebalance.PlanTransfer(context.Background(), plain, id, 4, 0, 1, 3); err != nil {
						t.Errorf("plan transfer: %v", err)
					}
				}
			},
			onRollback: func() {
				if planned.Load() && refused.CompareAndSwap(false, true) {
					wg.Add(1)
					go func() { // the warm was refused: the transfer ends
						defer wg.Done()
						if err := mover.Pass(context.Background()); err != nil {
							t.Errorf("rebalance pass: %v", err)
						}
					}()
				}
			}}, nil
	})
	cat := catalog.New(db, stock.New(rdb), testenv.NoLag)
	if _, err := cat.Put(ctx, closedSale(id, 40, 4)); err != nil {
		t.Fatal(err)
	}

	armed.Store(true)
	if _, err := cat.Put(ctx, closedSale(id, 80, 4)); err != nil {
		t.Fatalf("put with a transfer planned after its commit: %v; want it to wait for the transfer and warm", err)
	}
	if !planned.Load() || !refused.Load() {
		t.Fatalf("the transfer was planned: %v, the warm refused for it: %v; the test did not make the race it is about", planned.Load(), refused.Load())
	}
	wg.Wait()
	n, rows := mysqlRows(t, plain, id)
	l := readLayout(t, rdb, id, n)
	got := make([]int64, n)
	for b := range n {
		got[b] = l.stock[b]
	}
	if !slices.Equal(got, rows) || rows[0] != 17 || rows[1] != 23 {
		t.Fatalf("Redis buckets %v, MySQL %v; want them equal, 3 units moved from bucket 0 to 1 of 20 each", got, rows)
	}
}

// A PUT that must rebuild Redis in full because Redis lost the item (no
// new stock or count) is refused before its commit while a transfer is
// open, as a PUT of a new stock is: ErrInFlight, and MySQL keeps the old
// name. Refused only after the commit, it would change MySQL and answer
// 503 not_warmed.
func TestPutRefusesOpenTransferBeforeCommitWhenRedisLostTheItem(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	db, _ := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	cat := catalog.New(db, stock.New(rdb), testenv.NoLag)
	id := testenv.ItemID()
	if _, err := cat.Put(ctx, closedSale(id, 40, 4)); err != nil {
		t.Fatal(err)
	}
	if _, err := rebalance.PlanTransfer(ctx, db, id, 4, 0, 1, 3); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, stock.BucketKeys(id, 2).Stock).Err(); err != nil { // Redis lost a bucket
		t.Fatal(err)
	}
	renamed := closedSale(id, 40, 4)
	renamed.Name = "renamed"
	_, err := cat.Put(ctx, renamed)
	if !errors.Is(err, catalog.ErrInFlight) || !errors.Is(err, store.ErrTransfersOpen) || errors.Is(err, catalog.ErrNotWarmed) {
		t.Fatalf("put of an item Redis lost, with a transfer open: %v; want ErrInFlight and store.ErrTransfersOpen before the commit", err)
	}
	it, err := store.GetItem(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	if it.Name != "relayout" {
		t.Fatalf("the refused PUT changed MySQL: name %q", it.Name)
	}
}
