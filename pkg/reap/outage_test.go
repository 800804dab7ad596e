package reap_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// faultyStores returns a MySQL pool and a stock store on the test's
// database and the shared Redis, each dialled through its own FaultDialer,
// so the test can cut one without touching the servers others share.
func (e *env) faultyStores(timeout time.Duration) (*testenv.FaultDialer, *testenv.FaultDialer, *reap.Reaper, *prometheus.Registry) {
	e.t.Helper()
	myFD, redisFD := testenv.NewFaultDialer(), testenv.NewFaultDialer()
	netName := "fault-" + testenv.Suffix()
	mysql.RegisterDialContext(netName, func(ctx context.Context, addr string) (net.Conn, error) {
		return myFD.DialContext(ctx, "tcp", addr)
	})
	c := config.Common{MySQLDSN: e.dsn, StoreTimeout: timeout}
	cfg, err := mysql.ParseDSN(c.DSN())
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.Net = netName
	db, err := store.Open(testCtx(e.t, 10*time.Second), cfg.FormatDSN(), 8, 5*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { db.Close() })
	common := testenv.Common(e.t)
	rdb := redis.NewClient(&redis.Options{
		Addr: common.RedisAddrs()[0], Dialer: redisFD.DialContext,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: -1,
	})
	e.t.Cleanup(func() { rdb.Close() })
	reg := prometheus.NewRegistry()
	r := reap.New(reap.Config{
		Interval: 20 * time.Millisecond, BatchSize: 100, OrphanGrace: time.Minute, StoreTimeout: timeout,
	}, reap.Deps{DB: db, Stock: stock.New(rdb)}, reap.NewMetrics(reg), testLogger(e.t))
	return myFD, redisFD, r, reg
}

// Redis, then MySQL, unreachable: each pass fails, is counted and changes
// nothing it cannot finish; once both are back, the next pass completes the
// work exactly once (no restore skipped, none doubled).
func TestOutagesFailPassesThenRepair(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	orders := make([]order, 20)
	var qty int64
	for i := range orders {
		orders[i] = order{UserID: int64(i + 1), Qty: 2, ExpiresIn: -time.Second}
		qty += 2
	}
	it := e.newItem(qty, orders)
	myFD, redisFD, r, reg := e.faultyStores(300 * time.Millisecond)
	ctx := testCtx(t, time.Minute)

	redisFD.Cut()
	if r.RunPass(ctx) {
		t.Fatal("pass succeeded with Redis cut")
	}
	if n := e.count("SELECT COUNT(*) FROM orders WHERE item_id = ? AND status = 'CANCELLED'", it.ID); n != 20 {
		t.Errorf("cancelled during the Redis outage = %d, want 20 (MySQL work goes on)", n)
	}
	if got := e.redisStock(it.ID); got != 0 {
		t.Errorf("Redis stock = %d during its outage, want 0", got)
	}

	redisFD.Restore()
	myFD.Cut()
	if r.RunPass(ctx) {
		t.Fatal("pass succeeded with MySQL cut")
	}
	if got := e.redisStock(it.ID); got != 0 {
		t.Errorf("Redis stock = %d with MySQL cut, want 0 (restores are driven by MySQL records)", got)
	}
	if got := metric(t, reg, "flashsale_reaper_pass_failures_total"); got != 2 {
		t.Errorf("pass failures = %v, want 2", got)
	}
	if got := metric(t, reg, "flashsale_reaper_last_success_timestamp_seconds"); got != 0 {
		t.Errorf("last success set by a failed pass: %v", got)
	}

	myFD.Restore()
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool { return r.RunPass(ctx) }, "no pass succeeded after the outages")
	r.RunPass(ctx)
	if got := e.redisStock(it.ID); got != qty {
		t.Errorf("Redis stock after repair = %d, want %d", got, qty)
	}
	if got := e.dbStock(it.ID); got != qty {
		t.Errorf("MySQL stock after repair = %d, want %d", got, qty)
	}
	if got := metric(t, reg, "flashsale_reaper_restores_total", "store", "redis"); got != 20 {
		t.Errorf("redis restores = %v, want 20", got)
	}
	if got := metric(t, reg, "flashsale_reaper_restores_total", "store", "mysql"); got != 20 {
		t.Errorf("mysql restores = %v, want 20", got)
	}
	e.auditOK(it.ID)
}

// Run stops promptly on shutdown and returns nil.
func TestRunStopsOnShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, reg := e.newReaper(reap.Config{Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		return metric(t, reg, "flashsale_reaper_pass_duration_seconds") == 1
	}, "first pass did not run at once")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after shutdown")
	}
}

// A session whose time zone is not UTC would make NOW(3) judge UTC deadlines
// by a shifted clock: the reaper refuses it.
func TestCheckClockRefusesNonUTCSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, _ := e.newReaper(reap.Config{})
	ctx := testCtx(t, 10*time.Second)
	if err := r.CheckClock(ctx); err != nil {
		t.Fatalf("UTC session: %v", err)
	}
	cfg, err := mysql.ParseDSN((&config.Common{MySQLDSN: e.dsn, StoreTimeout: time.Second}).DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params["time_zone"] = "'+05:00'"
	db, err := store.Open(ctx, cfg.FormatDSN(), 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bad := reap.New(reap.Config{}, reap.Deps{DB: db, Stock: e.st}, reap.NewMetrics(prometheus.NewRegistry()), testLogger(t))
	if err := bad.CheckClock(ctx); !errors.Is(err, reap.ErrSessionClock) {
		t.Errorf("+05:00 session: %v, want ErrSessionClock", err)
	}
}
