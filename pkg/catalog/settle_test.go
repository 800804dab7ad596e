package catalog_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// transferRace is a catalog whose Put, once armed, meets a transfer of item
// id (bucket 0 -> 1, qty 3) that the rebalancer plans in the moment after
// the Put's commit. refusals counts the warms refused since (their
// transactions rolled back); onRefused, when set, runs on the first.
type transferRace struct {
	cat      *catalog.Catalog
	db       *sql.DB // a plain pool on the same database
	rdb      redis.UniversalClient
	id       int64
	armed    atomic.Bool
	planned  atomic.Bool
	refusals atomic.Int32
}

func newTransferRace(t *testing.T, onRefused func(r *transferRace)) *transferRace {
	t.Helper()
	plain, dsn := testenv.MySQL(t)
	r := &transferRace{db: plain, rdb: testenv.Redis(t), id: testenv.ItemID()}
	db := testenv.MySQLVia(t, dsn, func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &sqlWatch{Conn: c,
			onCommit: func() {
				// The plan waits on the item's row lock until the COMMIT has run.
				if r.armed.Load() && r.planned.CompareAndSwap(false, true) {
					if _, err := rebalance.PlanTransfer(context.Background(), plain, r.id, 4, 0, 1, 3); err != nil {
						t.Errorf("plan transfer: %v", err)
					}
				}
			},
			onRollback: func() {
				if r.planned.Load() && r.refusals.Add(1) == 1 && onRefused != nil {
					onRefused(r)
				}
			}}, nil
	})
	r.cat = catalog.New(db, stock.New(r.rdb), testenv.NoLag)
	return r
}

// mover is a rebalancer on r's stores: a Pass drives r's transfer to its end.
func (r *transferRace) mover() *rebalance.Rebalancer {
	return rebalance.New(rebalance.Config{StoreTimeout: 5 * time.Second}, rebalance.Deps{DB: r.db, Redis: r.rdb},
		rebalance.NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler))
}

// redisEqualsMySQL fails t unless Redis holds each of r's buckets' MySQL
// stock, and returns the MySQL stocks.
func (r *transferRace) redisEqualsMySQL(t *testing.T) []int64 {
	t.Helper()
	n, rows := mysqlRows(t, r.db, r.id)
	l := readLayout(t, r.rdb, r.id, n)
	got := make([]int64, n)
	for b := range n {
		got[b] = l.stock[b]
	}
	if !slices.Equal(got, rows) {
		t.Fatalf("Redis buckets %v, MySQL %v; want them equal", got, rows)
	}
	return rows
}

// The rebalancer plans a transfer between a PUT's commit and the warm that
// follows it (the contract run of 2026-12-08 met it: POST .../end, then a
// PUT with a new stock, answered 503 not_warmed). A transfer finishes in
// milliseconds, so Put must wait for it and warm, not give up: the PUT
// answers 200, and Redis holds what MySQL holds, bucket by bucket.
//
// The transfer is driven to its end only once the warm has been refused
// for it, so the refusal is met every run.
func TestPutWaitsForTransferPlannedAfterCommit(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var wg sync.WaitGroup
	r := newTransferRace(t, func(r *transferRace) {
		wg.Add(1)
		go func() { // the warm was refused: the transfer ends
			defer wg.Done()
			if err := r.mover().Pass(context.Background()); err != nil {
				t.Errorf("rebalance pass: %v", err)
			}
		}()
	})
	t.Cleanup(wg.Wait) // after r's stores' cleanups, so it runs before them
	if _, err := r.cat.Put(ctx, closedSale(r.id, 40, 4)); err != nil {
		t.Fatal(err)
	}

	r.armed.Store(true)
	if _, err := r.cat.Put(ctx, closedSale(r.id, 80, 4)); err != nil {
		t.Fatalf("put with a transfer planned after its commit: %v; want it to wait for the transfer and warm", err)
	}
	if !r.planned.Load() || r.refusals.Load() == 0 {
		t.Fatalf("the transfer was planned: %v, warms refused for it: %d; the test did not make the race it is about", r.planned.Load(), r.refusals.Load())
	}
	wg.Wait()
	if rows := r.redisEqualsMySQL(t); rows[0] != 17 || rows[1] != 23 {
		t.Fatalf("MySQL buckets %v; want 3 units moved from bucket 0 to 1 of 20 each", rows)
	}
}

// A transfer planned after the commit that does not end (no rebalancer
// running) is waited for a bounded time: Put returns ErrNotWarmed naming
// the transfer, having tried the warm more than once, and MySQL keeps the
// save. Redis is left as it was, and a warm once the transfer has ended
// brings it in line (the 503's advice: POST .../warm).
func TestPutGivesUpOnATransferThatDoesNotEnd(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	r := newTransferRace(t, nil)
	if _, err := r.cat.Put(ctx, closedSale(r.id, 40, 4)); err != nil {
		t.Fatal(err)
	}

	r.armed.Store(true)
	_, err := r.cat.Put(ctx, closedSale(r.id, 80, 4))
	var open *catalog.TransfersOpenError
	if !errors.Is(err, catalog.ErrNotWarmed) || !errors.As(err, &open) {
		t.Fatalf("put with a transfer that never ends: %v; want ErrNotWarmed naming the open transfer", err)
	}
	if n := r.refusals.Load(); n < 2 {
		t.Fatalf("the warm was refused %d times; want it tried again before giving up", n)
	}
	it, err := store.GetItem(ctx, r.db, r.id)
	if err != nil {
		t.Fatal(err)
	}
	if it.TotalStock != 80 {
		t.Fatalf("MySQL total %d after the commit; want the saved 80", it.TotalStock)
	}
	if sum, _, err := stock.New(r.rdb).Stock(ctx, r.id); err != nil || sum != 40 {
		t.Fatalf("Redis stock %d (%v); want the old 40 left as it was", sum, err)
	}

	if err := r.mover().Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.cat.Warm(ctx, r.id); err != nil {
		t.Fatalf("warm once the transfer ended: %v", err)
	}
	r.redisEqualsMySQL(t)
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
