// Command consumer is a member of the order writers' consumer group: it turns
// admitted requests from Kafka into orders in MySQL (see pkg/orderwriter).
// Run as many replicas as the orders topic has partitions.
package main

import (
	"context"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/service"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

func main() {
	var c config.Common
	var cc config.Consumer
	service.Main(service.Deployable{Name: "consumer", Common: &c, Config: &cc,
		Setup: func(ctx context.Context, p *service.Process) error { return run(ctx, p, c, cc) }})
}

func run(ctx context.Context, p *service.Process, c config.Common, cc config.Consumer) error {
	// One MySQL connection per concurrent item write, plus room for the
	// give-up path and the readiness check.
	st, err := p.Open(ctx, service.Needs{MySQLConns: max(8, cc.ItemParallelism+2), RedisConns: 32, Kafka: true, Scripts: true})
	if err != nil {
		return err
	}
	heartbeat, session, rebalance := cc.GroupTimeouts()
	w, err := orderwriter.New(orderwriter.Config{
		Brokers:           c.Brokers(),
		Dialer:            st.Kafka.Dialer(),
		Topic:             c.OrdersTopic,
		DLQTopic:          c.DLQTopic,
		GroupID:           c.ConsumerGroup,
		BatchSize:         cc.BatchSize,
		BatchWait:         cc.BatchWait,
		MaxBackoff:        cc.MaxBackoff,
		GiveUpAfter:       cc.GiveUpAfter,
		ItemParallelism:   cc.ItemParallelism,
		BatchesInFlight:   cc.BatchesInFlight,
		HeartbeatInterval: heartbeat, SessionTimeout: session, RebalanceTimeout: rebalance,
		PaymentWindow: c.PaymentWindow,
		StoreTimeout:  c.StoreTimeout,
		// Leave a quarter of the shutdown budget to commit, leave the group
		// and stop the ops server.
		DrainTimeout: c.ShutdownTimeout * 3 / 4,
	}, orderwriter.Deps{DB: st.DB, Stock: stock.New(st.Redis)}, orderwriter.NewMetrics(p.Registry), p.Log)
	if err != nil {
		return err
	}
	// Serving /healthz while the stores are waited for: exiting (or failing
	// liveness) during a failover is the crash loop this avoids.
	p.Ops(cc.MetricsAddr, st.Readiness(), nil)
	p.Await(st.Checks()...)
	p.Go(func(ctx context.Context) error {
		p.Log.Info("consuming", "batch_size", cc.BatchSize, "batch_wait", cc.BatchWait.String(),
			"item_parallelism", cc.ItemParallelism, "batches_in_flight", cc.BatchesInFlight)
		err := w.Run(ctx) // returns once what it wrote is committed
		p.Log.Info("left the consumer group")
		return err
	})
	return nil
}
