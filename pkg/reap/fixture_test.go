package reap_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// env is one test's stores: a fresh migrated database and the shared Redis
// (random item ids keep tests apart).
type env struct {
	t   testing.TB
	db  *sql.DB
	dsn string
	rdb redis.UniversalClient
	st  *stock.Store
}

func newEnv(t testing.TB) *env {
	t.Helper()
	db, dsn := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	return &env{t: t, db: db, dsn: dsn, rdb: rdb, st: stock.New(rdb)}
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// order is one order a fixture inserts: expiresIn is relative to the
// database's NOW(3) (negative: already expired).
type order struct {
	UserID    int64
	Qty       int
	ExpiresIn time.Duration
}

// item is a fixture item: MySQL items row, its orders, and Redis warmed to
// match (stock = total - ordered qty, buyers = the order holders).
type item struct {
	ID        int64
	Total     int64
	StartLeft int64 // stock left in both stores after the orders
	Requests  []string
}

// newItem inserts an item of total units with orders, and warms Redis.
func (e *env) newItem(total int64, orders []order) item {
	e.t.Helper()
	ctx := testCtx(e.t, 2*time.Minute)
	it := item{ID: testenv.ItemID(), Total: total}
	var used int64
	for _, o := range orders {
		used += int64(o.Qty)
	}
	it.StartLeft = total - used
	if it.StartLeft < 0 {
		e.t.Fatalf("fixture: %d ordered of %d", used, total)
	}
	_, err := e.db.ExecContext(ctx,
		"INSERT INTO items (id, name, price_cents, total_stock, stock, per_user_limit, starts_at, ends_at) VALUES (?, ?, 100, ?, ?, 5, NOW(3) - INTERVAL 1 HOUR, NOW(3) + INTERVAL 1 DAY)",
		it.ID, fmt.Sprintf("item %d", it.ID), total, it.StartLeft)
	if err != nil {
		e.t.Fatalf("fixture: insert item: %v", err)
	}
	buyers := make([]stock.Holder, 0, len(orders))
	for start := 0; start < len(orders); start += 2000 {
		end := min(start+2000, len(orders))
		var sb strings.Builder
		sb.WriteString("INSERT INTO orders (request_id, user_id, item_id, qty, price_cents, status, expires_at) VALUES ")
		args := make([]any, 0, 5*(end-start))
		for i := start; i < end; i++ {
			o := orders[i]
			if i > start {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?,100,'UNPAID',DATE_ADD(NOW(3), INTERVAL ? MICROSECOND))")
			rid := fmt.Sprintf("r-%d-%d", it.ID, i)
			it.Requests = append(it.Requests, rid)
			args = append(args, rid, o.UserID, it.ID, o.Qty, o.ExpiresIn.Microseconds())
			buyers = append(buyers, stock.Holder{UserID: o.UserID, RequestID: rid})
		}
		if _, err := e.db.ExecContext(ctx, sb.String(), args...); err != nil {
			e.t.Fatalf("fixture: insert orders: %v", err)
		}
		// Every order was ORDERED by the arbiter (the audit checks it).
		ds := make([]store.Decision, 0, end-start)
		for i := start; i < end; i++ {
			ds = append(ds, store.Decision{RequestID: it.Requests[i], ItemID: it.ID, UserID: orders[i].UserID, Qty: orders[i].Qty, Outcome: store.Ordered})
		}
		if err := store.InsertDecisions(ctx, e.db, ds); err != nil {
			e.t.Fatalf("fixture: insert decisions: %v", err)
		}
	}
	now := time.Now()
	if err := e.st.Warm(ctx, stock.Snapshot{ItemID: it.ID, Stock: it.StartLeft, StartsAt: now.Add(-time.Hour),
		EndsAt: now.Add(24 * time.Hour), PerUserLimit: 5, Buyers: buyers}); err != nil {
		e.t.Fatalf("fixture: warm: %v", err)
	}
	e.t.Cleanup(func() { e.dropRedis(it.ID) })
	return it
}

// dropRedis deletes every key of the item (stock, meta, buyers,
// reservations, guards, statuses) from the shared Redis.
func (e *env) dropRedis(itemID int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cursor uint64
	for {
		keys, next, err := e.rdb.Scan(ctx, cursor, fmt.Sprintf("fs:{item:%d}:*", itemID), 1000).Result()
		if err != nil {
			return
		}
		if len(keys) > 0 {
			e.rdb.Del(ctx, keys...)
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// newReaper returns a reaper on the env's stores with its own registry.
func (e *env) newReaper(cfg reap.Config) (*reap.Reaper, *prometheus.Registry) {
	if cfg.Interval == 0 {
		cfg.Interval = 20 * time.Millisecond
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 100
	}
	if cfg.OrphanGrace == 0 {
		cfg.OrphanGrace = time.Minute
	}
	if cfg.StoreTimeout == 0 {
		cfg.StoreTimeout = 5 * time.Second
	}
	// The tests age reservations and expect the next pass to see them: the
	// sweep runs every pass unless a test sets its cadence (-1: the
	// deployable's default, a tenth of the grace).
	switch cfg.OrphanSweepEvery {
	case 0:
		cfg.OrphanSweepEvery = time.Nanosecond
	case -1:
		cfg.OrphanSweepEvery = 0
	}
	reg := prometheus.NewRegistry()
	return reap.New(cfg, reap.Deps{DB: e.db, Stock: e.st}, reap.NewMetrics(reg), testLogger(e.t)), reg
}

// metric reads one series' value from reg; see testenv.Metric.
func metric(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	return testenv.Metric(t, reg, name, labels...)
}

func (e *env) dbStock(id int64) int64 {
	e.t.Helper()
	it, err := store.GetItem(testCtx(e.t, 10*time.Second), e.db, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return it.Stock
}

func (e *env) redisStock(id int64) int64 {
	e.t.Helper()
	v, ok, err := e.st.Stock(testCtx(e.t, 10*time.Second), id)
	if err != nil || !ok {
		e.t.Fatalf("redis stock of %d: %v (warmed %v)", id, err, ok)
	}
	return v
}

func (e *env) count(query string, args ...any) int64 {
	e.t.Helper()
	var n sql.NullInt64
	if err := e.db.QueryRowContext(testCtx(e.t, 30*time.Second), query, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", query, err)
	}
	return n.Int64
}

// statuses returns request id -> order status of the item.
func (e *env) statuses(id int64) map[string]store.OrderStatus {
	e.t.Helper()
	rows, err := e.db.QueryContext(testCtx(e.t, 30*time.Second), "SELECT request_id, status FROM orders WHERE item_id = ?", id)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]store.OrderStatus{}
	for rows.Next() {
		var rid, s string
		if err := rows.Scan(&rid, &s); err != nil {
			e.t.Fatal(err)
		}
		out[rid] = store.OrderStatus(s)
	}
	return out
}

// auditOK runs the shared invariant audit (I1–I7) on the item at quiescence.
func (e *env) auditOK(id int64) {
	e.t.Helper()
	rep, err := audit.Item(testCtx(e.t, 30*time.Second), e.db, e.st, id)
	if err != nil {
		e.t.Fatalf("audit %d: %v", id, err)
	}
	if !rep.OK {
		e.t.Fatalf("audit %d: %+v", id, rep)
	}
}

// runUntil runs the reapers' loops until cond holds (or fails the test), then
// stops them and waits for Run to return.
func runUntil(t testing.TB, timeout time.Duration, cond func() bool, rs ...*reap.Reaper) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, len(rs))
	for _, r := range rs {
		go func() { done <- r.Run(ctx) }()
	}
	defer func() {
		cancel()
		for range rs {
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}()
	testenv.Eventually(t, timeout, 20*time.Millisecond, cond, "reapers did not reach the expected state")
}
