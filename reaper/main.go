// Command reaper cancels UNPAID orders after the payment window and gives
// their stock back to MySQL and Redis exactly once, and voids orphaned Redis
// reservations through the arbiter. Run as many replicas as you like: they
// share the work through SKIP LOCKED claims and per-request Redis guards.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auditor"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/gate"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/startup"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
	"github.com/flashsale-dev/flashsale/schema"
)

func main() {
	var common config.Common
	var rc config.Reaper
	fs := flag.NewFlagSet("reaper", flag.ContinueOnError)
	if err := config.Parse(fs, os.Args[1:], &common, &rc); err != nil {
		os.Exit(config.Exit(fs, err))
	}
	log := tracing.Logger(ops.NewLogger("reaper", common.LogLevel, common.LogBurst))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ops.ExitAfter(ctx, common.ShutdownTimeout, log)
	if err := run(ctx, common, rc, log); err != nil {
		log.Error("reaper failed", "err", err)
		if errors.Is(err, reap.ErrSessionClock) {
			os.Exit(2)
		}
		os.Exit(1)
	}
	log.Info("reaper stopped")
}

func run(ctx context.Context, c config.Common, rc config.Reaper, log *slog.Logger) error {
	stopTracing, err := tracing.Init(ctx, "reaper", log) // deferred first: flushes last
	if err != nil {
		return err
	}
	defer stopTracing()
	db, err := store.Pool(c.DSN(), 8)
	if err != nil {
		return err
	}
	defer db.Close()
	// A refused login or certificate stops start-up (one line naming the
	// setting); a store that is merely down is waited for below.
	if err := c.CheckMySQL(ctx, db); err != nil {
		return err
	}
	rdb := stock.NewClientFrom(c.RedisConn(), c.StoreTimeout, 32)
	defer rdb.Close()
	if err := stock.StartupCheck(ctx, rdb, c.RedisConn(), c.StoreTimeout); err != nil {
		return err
	}

	reg := ops.NewRegistry("reaper")
	ops.ServePprof(ctx, c.PprofAddr, log)
	rm := reap.NewMetrics(reg)
	rm.OrphanGrace.Set(rc.OrphanGrace.Seconds())
	r := reap.New(reap.Config{
		Interval: rc.Interval, BatchSize: rc.BatchSize, OrphanGrace: rc.OrphanGrace, StoreTimeout: c.StoreTimeout,
		SweepUnknownItems: rc.SweepUnknownItems,
	}, reap.Deps{DB: db, Stock: stock.New(rdb)}, rm, log)
	ready := ops.Readiness{Timeout: c.StoreTimeout, Checks: map[string]ops.Check{
		"mysql": db.PingContext,
		"redis": func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	}}
	srv := &http.Server{Handler: ops.Mux(reg, ready), ReadHeaderTimeout: 5 * time.Second}
	// An ops server that cannot listen stops the reaper: a replica nobody
	// can probe or scrape should not run unnoticed.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	serveErr := make(chan error, 1)
	go func() {
		err := ops.Serve(ctx, srv, rc.MetricsAddr, c.ShutdownTimeout, log)
		if err != nil {
			cancel(err)
		}
		serveErr <- err
	}()
	// The stores are waited for with the ops server up (a failover is not
	// a crash loop), then checked: an unfit server or a schema behind this
	// binary stops the reaper before it touches anything.
	go ops.WatchDependencies(ctx, ready, startup.WatchEvery, ops.NewDependencyGauge(reg), log)
	checks := startup.Checks{Timeout: c.StoreTimeout, Server: c.ServerChecks, Schema: schema.FS, Log: log}
	if err := errors.Join(checks.MySQL(ctx, db), checks.Redis(ctx, rdb), r.CheckClock(ctx)); err != nil {
		if ctx.Err() != nil && context.Cause(ctx) == ctx.Err() {
			err = nil // stopped while waiting: a shutdown, not a failure
		}
		cancel(nil)
		return errors.Join(err, <-serveErr)
	}

	// The auditor rides along: it already needs exactly the reaper's two
	// stores, and one exporter of the drift gauges is enough (it runs in
	// every replica; alert on max()).
	aud := &auditor.Auditor{DB: db, Stock: stock.New(rdb), Interval: rc.AuditInterval,
		Metrics: auditor.NewMetrics(reg), Log: log.With("component", "auditor")}
	audErr := make(chan error, 1)
	go func() { audErr <- aud.Run(ctx) }()

	// The rebalancer moves stock between the buckets of bucketed items
	// (pkg/rebalance); it needs the same two stores. With a lease only one
	// replica moves at a time; without, all do, as safely.
	rbErr := make(chan error, 1)
	if rb := rc.Rebalance; rb.Interval > 0 {
		reb := rebalance.New(rebalance.Config{Interval: rb.Interval, PassTimeout: rb.PassTimeout, Lease: rb.Lease, StoreTimeout: c.StoreTimeout},
			rebalance.Deps{DB: db, Redis: rdb}, rebalance.NewMetrics(reg), log.With("component", "rebalancer"))
		go func() { rbErr <- reb.Run(ctx) }()
	} else {
		rbErr <- nil
	}

	// The waiting room's gate admits queued items' tickets at their rates
	// (pkg/gate); one replica at a time, by its own lease.
	gateErr := make(chan error, 1)
	if gc := rc.Gate; gc.Interval > 0 {
		gt := gate.New(gate.Config{Interval: gc.Interval, Lease: gc.Lease, ClaimWindow: gc.ClaimWindow, MaxInFlight: gc.MaxInFlight, StoreTimeout: c.StoreTimeout},
			db, rdb, gate.NewMetrics(reg), log.With("component", "gate"))
		go func() { gateErr <- gt.Run(ctx) }()
	} else {
		gateErr <- nil
	}

	log.Info("reaper running", "interval", rc.Interval.String(), "batch", rc.BatchSize,
		"orphan_grace", rc.OrphanGrace.String(), "payment_window", c.PaymentWindow.String(),
		"audit_interval", rc.AuditInterval.String(), "rebalance_interval", rc.Rebalance.Interval.String())
	runErr := r.Run(ctx) // returns on shutdown, after the batch in progress
	cancel(nil)
	return errors.Join(runErr, <-audErr, <-rbErr, <-gateErr, <-serveErr)
}
