// Command ingress is flashsale's HTTP front door: it authenticates buyers,
// admits orders through Redis, publishes them durably to Kafka, and serves
// order status, payment and the admin API (see pkg/httpapi).
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/httpapi"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/queue"
	"github.com/flashsale-dev/flashsale/pkg/startup"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
	"github.com/flashsale-dev/flashsale/schema"
)

//go:embed openapi.yaml
var openAPI []byte

func main() {
	var common config.Common
	var ingress config.Ingress
	fs := flag.NewFlagSet("ingress", flag.ContinueOnError)
	if err := config.Parse(fs, os.Args[1:], &common, &ingress); err != nil {
		os.Exit(config.Exit(fs, err))
	}
	log := tracing.Logger(slog.New(httpapi.ContextHandler(ops.NewLogger("ingress", common.LogLevel, common.LogBurst).Handler())))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ops.ExitAfter(ctx, common.ShutdownTimeout+5*time.Second, log)
	if err := run(ctx, common, ingress, log); err != nil {
		log.Error("ingress failed", "err", err)
		os.Exit(1)
	}
	log.Info("ingress stopped")
}

func run(ctx context.Context, c config.Common, in config.Ingress, log *slog.Logger) error {
	stopTracing, err := tracing.Init(ctx, "ingress", log) // deferred first: flushes last
	if err != nil {
		return err
	}
	defer stopTracing()
	// Not pinged here: MySQL is optional to admission, waited for below.
	db, err := store.Pool(c.DSN(), 64)
	if err != nil {
		return err
	}
	defer db.Close()
	// A refused login or certificate stops start-up (one line naming the
	// setting); a store that is merely down is waited for below.
	if err := c.CheckMySQL(ctx, db); err != nil {
		return err
	}
	rdb := stock.NewClientFrom(c.RedisConn(), c.StoreTimeout, 512)
	defer rdb.Close()
	if err := stock.StartupCheck(ctx, rdb, c.RedisConn(), c.StoreTimeout); err != nil {
		return err
	}
	if err := stock.LoadScripts(ctx, rdb); err != nil {
		log.Warn("lua scripts not preloaded; they load on first use", "err", err)
	}
	codec, err := queue.ParseCompression(in.PublishCompression)
	if err != nil {
		return err
	}
	kafkaSec, err := queue.NewSecurity(c.Kafka)
	if err != nil {
		return err
	}
	if err := kafkaSec.StartupCheck(ctx, c.Brokers(), c.StoreTimeout); err != nil {
		return err
	}
	// A Publisher: a partition's publishes gather while its produce is in
	// flight, so a slow link to the brokers does not cap a hot item's
	// partition at one small batch per round trip, and the many items of one
	// partition leave in one call (pkg/queue/publisher.go); Warm learns the
	// partitions.
	writer := kafkaSec.NewPublisher(c.Brokers(), c.OrdersTopic, in.PublishTimeout, queue.Batching{
		Size: in.PublishBatchSize, Bytes: int64(in.PublishBatchBytes), Timeout: in.PublishBatchTimeout, Compression: codec})
	wctx, wcancel := context.WithTimeout(ctx, in.PublishTimeout)
	if err := writer.Warm(wctx); err != nil {
		log.Warn("kafka writer not warmed; the first publishes will be slower", "err", err)
	}
	wcancel()
	reg := ops.NewRegistry("ingress")
	checks := startup.Checks{Timeout: c.StoreTimeout, Server: c.ServerChecks, Schema: schema.FS, Log: log}
	st := stock.New(rdb)
	if b := in.RedisBatch; b.MaxBatch > 0 {
		co := stock.NewCoalescer(rdb, stock.CoalesceConfig{MaxBatch: b.MaxBatch, Window: b.Window, Flushers: b.Flushers,
			Observe: httpapi.RedisBatchSizes(reg)})
		defer co.Close() // before rdb.Close: deferred later, run earlier
		st = st.WithCoalescer(co)
	}
	ops.ServePprof(ctx, c.PprofAddr, log)
	srv, err := httpapi.New(httpapi.Config{Ingress: in, StoreTimeout: c.StoreTimeout, Brokers: c.Brokers(), Kafka: kafkaSec, Topic: c.OrdersTopic, DLQTopic: c.DLQTopic, Group: c.ConsumerGroup},
		httpapi.Deps{DB: db, Stock: st, Publisher: writer, Registry: reg, Log: log, OpenAPI: openAPI})
	if err != nil {
		_ = writer.Close()
		return err
	}
	hs := &http.Server{Handler: srv.Echo(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: in.PublishTimeout + 2*c.StoreTimeout + 5*time.Second + in.StatusWaitMax, IdleTimeout: 2 * time.Minute}
	// Polls waiting on ?wait= answer PENDING at once when the shutdown
	// starts, instead of holding it for up to FLASHSALE_STATUS_WAIT_MAX.
	hs.RegisterOnShutdown(srv.StopWaiting)
	opsSrv := &http.Server{Handler: srv.Ops(), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second}
	// Both ports are bound before either serves: when one answers, the
	// other does too, and a taken port stops the ingress at once.
	apiLn, err := ops.Listen(in.HTTPAddr)
	if err != nil {
		_ = writer.Close()
		return err
	}
	opsLn, err := ops.Listen(in.MetricsAddr)
	if err != nil {
		_ = apiLn.Close()
		_ = writer.Close()
		return err
	}
	// The two listeners stop together: an ingress nobody can probe or
	// scrape is worse than none. A store refused at start-up (pkg/startup:
	// an unfit server, a schema behind this binary) stops both too; until
	// the stores answer, /readyz says which one is missing.
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go startup.Watch(sctx, cancel, srv.Readiness(), ops.NewDependencyGauge(reg), log,
		func(ctx context.Context) error { return checks.Redis(ctx, rdb) },
		func(ctx context.Context) error { return checks.MySQL(ctx, db) })
	opsErr := make(chan error, 1)
	go func() {
		opsErr <- ops.ServeListener(sctx, opsSrv, opsLn, c.ShutdownTimeout/4, log.With("component", "ops"))
		cancel(nil)
	}()
	// Serve stops accepting on ctx.Done and waits for in-flight requests, so
	// every publish they started has finished before the writer is closed.
	serveErr := ops.ServeListener(sctx, hs, apiLn, c.ShutdownTimeout, log)
	cancel(nil)
	serveErr = errors.Join(serveErr, <-opsErr, startup.Refused(sctx))
	// The drained server's last answers go to the live view's tallies.
	fctx, fcancel := context.WithTimeout(context.Background(), c.StoreTimeout)
	if err := srv.Close(fctx); err != nil {
		log.Warn("last live-view tallies not flushed", "err", err)
	}
	fcancel()
	if err := writer.Close(); err != nil {
		serveErr = errors.Join(serveErr, fmt.Errorf("ingress: close kafka writer: %w", err))
	}
	return serveErr
}
