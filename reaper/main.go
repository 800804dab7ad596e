// Command reaper cancels UNPAID orders after the payment window and gives
// their stock back to MySQL and Redis exactly once, and voids orphaned Redis
// reservations through the arbiter. Run as many replicas as you like: they
// share the work through SKIP LOCKED claims and per-request Redis guards.
package main

import (
	"context"

	"github.com/flashsale-dev/flashsale/pkg/auditor"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/service"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

func main() {
	var c config.Common
	var rc config.Reaper
	service.Main(service.Deployable{Name: "reaper", Common: &c, Config: &rc, ExitCodes: map[error]int{reap.ErrSessionClock: 2},
		Setup: func(ctx context.Context, p *service.Process) error { return run(ctx, p, c, rc) }})
}

func run(ctx context.Context, p *service.Process, c config.Common, rc config.Reaper) error {
	st, err := p.Open(ctx, service.Needs{MySQLConns: 8, RedisConns: 32})
	if err != nil {
		return err
	}
	rm := reap.NewMetrics(p.Registry)
	rm.OrphanGrace.Set(rc.OrphanGrace.Seconds())
	r := reap.New(reap.Config{
		Interval: rc.Interval, BatchSize: rc.BatchSize, OrphanGrace: rc.OrphanGrace, StoreTimeout: c.StoreTimeout,
		SweepUnknownItems: rc.SweepUnknownItems,
	}, reap.Deps{DB: st.DB, Stock: stock.New(st.Redis)}, rm, p.Log)
	// The stores are waited for with the ops server up (a failover is not
	// a crash loop), then checked: an unfit server, a schema behind this
	// binary or a session clock not in UTC stops the reaper before it
	// touches anything.
	p.Ops(rc.MetricsAddr, st.Readiness(), nil)
	p.Await(st.Checks()...)
	p.Await(r.CheckClock)
	// The auditor rides along: it already needs exactly the reaper's two
	// stores, and one exporter of the drift gauges is enough (it runs in
	// every replica; alert on max()).
	// It watches a sale until it settled: its last orders paid or reaped
	// and its orphans voided.
	p.Go((&auditor.Auditor{DB: st.DB, Stock: stock.New(st.Redis), Interval: rc.AuditInterval,
		Settle:  c.PaymentWindow + rc.OrphanGrace + 2*rc.Interval,
		Metrics: auditor.NewMetrics(p.Registry), Log: p.Log.With("component", "auditor")}).Run)
	// The rebalancer moves stock between the buckets of bucketed items
	// (pkg/rebalance). With a lease only one replica moves at a time;
	// without, all do, as safely.
	rb := rc.Rebalance
	mover := rebalance.New(rebalance.Config{Interval: rb.Interval, PassTimeout: rb.PassTimeout, Lease: rb.Lease, StoreTimeout: c.StoreTimeout},
		rebalance.Deps{DB: st.DB, Redis: st.Redis}, rebalance.NewMetrics(p.Registry), p.Log.With("component", "rebalancer"))
	if rb.Interval > 0 {
		p.Go(mover.Run)
	}
	// The waiting room's gate admits queued items' tickets at their rates
	// (pkg/waitroom); one replica at a time, by its own lease. It moves a
	// bucketed item's released units between the buckets' pools through the
	// rebalancer's waitlist transfers, whether or not the rebalancer passes.
	if gc := rc.Gate; gc.Interval > 0 {
		p.Go(waitroom.NewGate(waitroom.GateConfig{Interval: gc.Interval, Lease: gc.Lease, ClaimWindow: gc.ClaimWindow, MaxInFlight: gc.MaxInFlight,
			StoreTimeout: c.StoreTimeout, Mover: mover},
			st.DB, st.Redis, waitroom.NewGateMetrics(p.Registry), p.Log.With("component", "gate")).Run)
	}
	p.Go(func(ctx context.Context) error {
		p.Log.Info("reaper running", "interval", rc.Interval.String(), "batch", rc.BatchSize,
			"orphan_grace", rc.OrphanGrace.String(), "payment_window", c.PaymentWindow.String(),
			"audit_interval", rc.AuditInterval.String(), "rebalance_interval", rc.Rebalance.Interval.String())
		return r.Run(ctx) // returns on shutdown, after the batch in progress
	})
	return nil
}
