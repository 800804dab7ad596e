package rebalance

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/bucketview"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// env is one test's stores: a database of its own, the shared Redis (items
// are random ids) and a rebalancer with its own registry.
type env struct {
	t   *testing.T
	db  *sql.DB
	dsn string
	rdb redis.UniversalClient
	st  *stock.Store
	reg *prometheus.Registry
	r   *Rebalancer
	// user is the last user id admit used: each buyer is new.
	user int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, dsn := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	e := &env{t: t, db: db, dsn: dsn, rdb: rdb, st: stock.New(rdb), reg: prometheus.NewRegistry()}
	e.r = e.rebalancer(Config{Interval: 20 * time.Millisecond})
	return e
}

// rebalancer returns a Rebalancer on e's stores; a lease, if any, on a key
// of the test's own.
func (e *env) rebalancer(cfg Config) *Rebalancer {
	if cfg.LeaseKey == "" {
		cfg.LeaseKey = "fs:test:rebalance:lease:" + testenv.Suffix()
	}
	cfg.StoreTimeout = 5 * time.Second
	return New(cfg, Deps{DB: e.db, Redis: e.rdb}, NewMetrics(prometheus.WrapRegistererWith(prometheus.Labels{"r": testenv.Suffix()}, e.reg)), quiet())
}

// soldOut is the ingress's judgement of an item's n buckets for a buyer of
// qty (pkg/admission: a bucketview.Snapshot, then SoldOut).
func (e *env) soldOut(item int64, n, qty int) (bool, error) {
	snap, err := bucketview.NewStore(e.st).Snapshot(context.Background(), item, n)
	return snap.SoldOut(qty), err
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// item creates an item of total units over n buckets in MySQL, its sale
// open, and warms it (every bucket gets total/n).
func (e *env) item(total int64, n int) int64 {
	e.t.Helper()
	return e.newItem(total, n, false)
}

// newItem is item, with a waiting room when queue is set (opened an hour
// ago).
func (e *env) newItem(total int64, n int, queue bool) int64 {
	e.t.Helper()
	ctx := context.Background()
	id := testenv.ItemID()
	now := time.Now()
	it := store.Item{ID: id, Name: "t", PriceCents: 100, TotalStock: total,
		PerUserLimit: 1, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: n}
	if queue {
		it.Queue, it.QueueOpensAt, it.QueueRate = true, now.Add(-time.Hour), 100
	}
	if _, err := catalog.New(e.db, e.st, testenv.NoLag).Put(ctx, it); err != nil {
		e.t.Fatalf("create item %d: %v", id, err)
	}
	return id
}

// admit admits k buyers in bucket b of item (n buckets): Redis stock and
// reservations as a sale leaves them before the consumer ran.
func (e *env) admit(item int64, n, b, k int) {
	e.t.Helper()
	for range k {
		e.user = testenv.UserIn(b, n, e.user+1)
		u := e.user
		r, err := e.st.Admit(context.Background(), stock.AdmitRequest{ItemID: item, Buckets: n, Bucket: b, UserID: u, Qty: 1,
			RequestID: reqid.NewIn(item, b, time.Now()), Now: time.Now()})
		if err != nil || r.Code != stock.Admitted {
			e.t.Fatalf("admit user %d in bucket %d: %+v, %v", u, b, r, err)
		}
	}
}

// snapshot is both stores' view of an item's buckets.
type snapshot struct {
	mysql    []store.StockRow
	redis    []int64
	reserved []int64 // Redis reservations per bucket (each of qty 1 here)
}

func (e *env) snapshot(item int64, n int) snapshot {
	e.t.Helper()
	ctx := context.Background()
	rows, err := store.BucketRows(ctx, e.db, item, false)
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := e.st.BucketStocks(ctx, item, n)
	if err != nil {
		e.t.Fatal(err)
	}
	s := snapshot{mysql: rows, redis: st, reserved: make([]int64, n)}
	for b := range n {
		s.reserved[b] = e.rdb.HLen(ctx, stock.BucketKeys(item, b).Reservations).Val()
	}
	return s
}

// conserved checks that nothing was invented or lost: the totals add up to
// total, and per bucket MySQL's stock is Redis' stock plus its pending
// reservations (no consumer runs in these tests) and total_stock is stock
// (no orders in MySQL).
func (e *env) conserved(item int64, n int, total int64) snapshot {
	e.t.Helper()
	s := e.snapshot(item, n)
	if len(s.mysql) != n {
		e.t.Fatalf("item %d has %d bucket rows; want %d", item, len(s.mysql), n)
	}
	var sum int64
	for b, row := range s.mysql {
		sum += row.TotalStock
		if row.TotalStock != row.Stock {
			e.t.Errorf("bucket %d: MySQL total %d != stock %d with no orders", b, row.TotalStock, row.Stock)
		}
		if row.Stock != s.redis[b]+s.reserved[b] {
			e.t.Errorf("bucket %d: MySQL stock %d != Redis stock %d + %d reservations", b, row.Stock, s.redis[b], s.reserved[b])
		}
	}
	if sum != total {
		e.t.Errorf("bucket totals add up to %d; want %d", sum, total)
	}
	if e.t.Failed() {
		e.t.FailNow()
	}
	return s
}

// states counts item's transfers by state.
func (e *env) states(item int64) map[store.TransferState]int {
	e.t.Helper()
	rows, err := e.db.QueryContext(context.Background(), "SELECT state, COUNT(*) FROM stock_transfers WHERE item_id = ? GROUP BY state", item)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[store.TransferState]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			e.t.Fatal(err)
		}
		out[store.TransferState(st)] = n
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// settled checks that item has no open transfer, none in TransfersLive,
// and returns its transfers by state.
func (e *env) settled(item int64) map[store.TransferState]int {
	e.t.Helper()
	out := e.states(item)
	if out[store.TransferPlanned]+out[store.TransferMoved] != 0 {
		e.t.Fatalf("item %d has open transfers: %v", item, out)
	}
	if live := e.rdb.SMembers(context.Background(), stock.KeysOf(item).TransfersLive()).Val(); len(live) != 0 {
		e.t.Fatalf("item %d's TransfersLive = %v; want empty", item, live)
	}
	return out
}

func (e *env) setWant(item int64, b int) {
	e.t.Helper()
	if err := e.rdb.Set(context.Background(), stock.BucketKeys(item, b).Want, "1", time.Minute).Err(); err != nil {
		e.t.Fatal(err)
	}
}

// metric is name's value summed over every rebalancer of the test (each
// registers under its own "r" label).
func (e *env) metric(name string, labels ...string) float64 {
	e.t.Helper()
	return testenv.MetricSum(e.t, e.reg, name, labels...)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
