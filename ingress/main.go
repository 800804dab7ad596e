// Command ingress is flashsale's HTTP front door: it authenticates buyers,
// admits orders through Redis, publishes them durably to Kafka, and serves
// order status, payment and the admin API (see pkg/httpapi).
package main

import (
	"context"
	_ "embed"
	"net/http"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/httpapi"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/service"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

//go:embed openapi.yaml
var openAPI []byte

func main() {
	var c config.Common
	var in config.Ingress
	// ExitGrace: past the API's drain, the live view's last tallies and the Kafka writer's close.
	service.Main(service.Deployable{Name: "ingress", Common: &c, Config: &in, LogHandler: httpapi.ContextHandler,
		ExitGrace: 5 * time.Second, Setup: func(ctx context.Context, p *service.Process) error { return run(ctx, p, c, in) }})
}

func run(ctx context.Context, p *service.Process, c config.Common, in config.Ingress) error {
	st, err := p.Open(ctx, service.Needs{MySQLConns: 64, RedisConns: 512, Kafka: true, Scripts: true})
	if err != nil {
		return err
	}
	stk := stock.New(st.Redis)
	if b := in.RedisBatch; b.MaxBatch > 0 {
		co := stock.NewCoalescer(st.Redis, stock.CoalesceConfig{MaxBatch: b.MaxBatch, Window: b.Window, Flushers: b.Flushers,
			Observe: httpapi.RedisBatchSizes(p.Registry)})
		p.Defer(func() error { co.Close(); return nil }) // after the Kafka writer, before Redis
		stk = stk.WithCoalescer(co)
	}
	codec, err := orderlog.ParseCompression(in.PublishCompression)
	if err != nil {
		return err
	}
	// A Publisher: a partition's publishes gather while its produce is in flight (pkg/orderlog/publisher.go);
	// Warm learns the partitions. Closed once the API has drained: after every publish it started.
	writer := st.Kafka.NewPublisher(c.Brokers(), c.OrdersTopic, in.PublishTimeout, orderlog.Batching{
		Size: in.PublishBatchSize, Bytes: int64(in.PublishBatchBytes), Timeout: in.PublishBatchTimeout, Compression: codec})
	p.DeferClose("kafka writer", writer)
	wctx, wcancel := context.WithTimeout(ctx, in.PublishTimeout)
	if err := writer.Warm(wctx); err != nil {
		p.Log.Warn("kafka writer not warmed; the first publishes will be slower", "err", err)
	}
	wcancel()
	srv, err := httpapi.New(httpapi.Config{Ingress: in, StoreTimeout: c.StoreTimeout, Brokers: c.Brokers(), Kafka: st.Kafka, Topic: c.OrdersTopic, DLQTopic: c.DLQTopic, Group: c.ConsumerGroup},
		httpapi.Deps{DB: st.DB, Stock: stk, Publisher: writer, Registry: p.Registry, Log: p.Log, OpenAPI: openAPI})
	if err != nil {
		return err
	}
	p.Defer(func() error { // the drained server's last answers go to the live view's tallies
		fctx, fcancel := context.WithTimeout(context.Background(), c.StoreTimeout)
		defer fcancel()
		if err := srv.Close(fctx); err != nil {
			p.Log.Warn("last live-view tallies not flushed", "err", err)
		}
		return nil
	})
	hs := &http.Server{Handler: srv.Echo(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: in.PublishTimeout + 2*c.StoreTimeout + in.RedisMoveWait + 5*time.Second + in.StatusWaitMax, IdleTimeout: 2 * time.Minute}
	// Polls on ?wait= answer PENDING as the shutdown starts, not up to FLASHSALE_STATUS_WAIT_MAX later.
	hs.RegisterOnShutdown(srv.StopWaiting)
	p.Serve(hs, in.HTTPAddr, c.ShutdownTimeout)
	p.Ops(in.MetricsAddr, srv.Readiness(), &http.Server{Handler: srv.Ops(), ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second})
	// Serving while the stores are waited for (MySQL is optional to
	// admission): until they answer, /readyz says which one is missing.
	p.Await(st.Checks()...)
	return nil
}
