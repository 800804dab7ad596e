// Command consumer is a member of the order writers' consumer group: it turns
// admitted requests from Kafka into orders in MySQL (see pkg/orderwriter).
// Run as many replicas as the orders topic has partitions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/queue"
	"github.com/flashsale-dev/flashsale/pkg/startup"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
	"github.com/flashsale-dev/flashsale/schema"
)

func main() {
	var common config.Common
	var cc config.Consumer
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	if err := config.Parse(fs, os.Args[1:], &common, &cc); err != nil {
		os.Exit(config.Exit(fs, err))
	}
	if err := run(common, cc); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(common config.Common, cc config.Consumer) error {
	log := tracing.Logger(ops.NewLogger("consumer", common.LogLevel, common.LogBurst))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ops.ExitAfter(ctx, common.ShutdownTimeout, log)
	stopTracing, err := tracing.Init(ctx, "consumer", log) // deferred first: flushes last
	if err != nil {
		return err
	}
	defer stopTracing()

	// One connection per concurrent item write, plus room for the give-up
	// path and the readiness check.
	db, err := store.Pool(common.DSN(), max(8, cc.ItemParallelism+2))
	if err != nil {
		return err
	}
	defer db.Close()
	// A refused login or certificate stops start-up (one line naming the
	// setting); a store that is merely down is waited for below.
	if err := common.CheckMySQL(ctx, db); err != nil {
		return err
	}
	rdb := stock.NewClientFrom(common.RedisConn(), common.StoreTimeout, 32)
	defer rdb.Close()
	if err := stock.StartupCheck(ctx, rdb, common.RedisConn(), common.StoreTimeout); err != nil {
		return err
	}
	kafkaSec, err := queue.NewSecurity(common.Kafka)
	if err != nil {
		return err
	}
	if err := kafkaSec.StartupCheck(ctx, common.Brokers(), common.StoreTimeout); err != nil {
		return err
	}
	st := stock.New(rdb)
	if err := stock.LoadScripts(ctx, rdb); err != nil {
		log.Warn("preload lua scripts", "err", err) // an optimisation only
	}

	reg := ops.NewRegistry("consumer")
	ops.ServePprof(ctx, common.PprofAddr, log)
	c, err := orderwriter.New(orderwriter.Config{
		Brokers:         common.Brokers(),
		Dialer:          kafkaSec.Dialer(),
		Topic:           common.OrdersTopic,
		DLQTopic:        common.DLQTopic,
		GroupID:         common.ConsumerGroup,
		BatchSize:       cc.BatchSize,
		BatchWait:       cc.BatchWait,
		MaxBackoff:      cc.MaxBackoff,
		GiveUpAfter:     cc.GiveUpAfter,
		ItemParallelism: cc.ItemParallelism,
		BatchesInFlight: cc.BatchesInFlight,
		PaymentWindow:   common.PaymentWindow,
		StoreTimeout:    common.StoreTimeout,
		// Leave a quarter of the shutdown budget to commit, leave the group
		// and stop the ops server.
		DrainTimeout: common.ShutdownTimeout * 3 / 4,
	}, orderwriter.Deps{DB: db, Stock: st}, orderwriter.NewMetrics(reg), log)
	if err != nil {
		return err
	}
	ready := ops.Readiness{Timeout: common.StoreTimeout, Checks: map[string]ops.Check{
		"mysql": db.PingContext,
		"redis": func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		"kafka": func(ctx context.Context) error { return kafkaSec.Ping(ctx, common.Brokers()) },
	}}
	srv := &http.Server{Handler: ops.Mux(reg, ready), ReadHeaderTimeout: 5 * time.Second}

	// The ops server and the consumer stop together: a failing ops listener
	// stops the consumer too (an unobservable replica is worse than none).
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serveErr := make(chan error, 1)
	go func() {
		serveErr <- ops.Serve(rctx, srv, cc.MetricsAddr, common.ShutdownTimeout/4, log)
		cancel()
	}()
	// Serving /healthz while the stores are waited for: exiting (or failing
	// liveness) during a failover is the crash loop this avoids.
	go ops.WatchDependencies(rctx, ready, startup.WatchEvery, ops.NewDependencyGauge(reg), log)
	checks := startup.Checks{Timeout: common.StoreTimeout, Server: common.ServerChecks, Schema: schema.FS, Log: log}
	if err := errors.Join(checks.MySQL(rctx, db), checks.Redis(rctx, rdb)); err != nil {
		if rctx.Err() != nil {
			err = nil // stopped while waiting: a shutdown, not a failure
		}
		cancel()
		return errors.Join(err, <-serveErr)
	}
	log.Info("consuming", "batch_size", cc.BatchSize, "batch_wait", cc.BatchWait.String(),
		"item_parallelism", cc.ItemParallelism, "batches_in_flight", cc.BatchesInFlight)
	runErr := c.Run(rctx)
	log.Info("left the consumer group")
	cancel()
	return errors.Join(runErr, <-serveErr)
}
