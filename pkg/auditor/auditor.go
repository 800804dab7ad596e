// Package auditor runs the invariant audit (pkg/audit) periodically over the
// recent items and exports the result as gauges, so Prometheus can alert on
// stock drift between MySQL and Redis (I3) or any violated invariant without
// anybody calling the admin endpoint.
//
// The item id is a label here: a flash sale has a handful of items, and the
// auditor watches at most MaxItems of them (the most recent ids), so the
// label's cardinality stays bounded.
package auditor

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// MaxItems bounds how many items (most recent ids first) one pass audits.
const MaxItems = 50

// Metrics are the auditor's gauges.
type Metrics struct {
	stock      *prometheus.GaugeVec
	pending    *prometheus.GaugeVec
	drift      *prometheus.GaugeVec
	orders     *prometheus.GaugeVec
	violations *prometheus.GaugeVec
	lastRun    prometheus.Gauge
	failures   prometheus.Counter
}

// NewMetrics registers the auditor's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		stock: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_units",
			Help: "Units an item still has to sell, per store (mysql, redis)."}, []string{"item", "store"}),
		pending: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_pending_units",
			Help: "Units reserved in Redis whose request has no outcome yet."}, []string{"item"}),
		drift: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_drift_units",
			Help: "Redis stock plus pending reservations minus MySQL stock; 0 when the stores agree (I3)."}, []string{"item"}),
		orders: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_orders_units",
			Help: "Units in orders per status (UNPAID, PAID, CANCELLED)."}, []string{"item", "status"}),
		violations: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_audit_violations",
			Help: "Invariant violations (I1-I7) found by the last audit of the item."}, []string{"item"}),
		lastRun: f.NewGauge(prometheus.GaugeOpts{Name: "flashsale_audit_last_success_timestamp_seconds",
			Help: "Unix time of the last audit pass that read every item."}),
		failures: f.NewCounter(prometheus.CounterOpts{Name: "flashsale_audit_failures_total",
			Help: "Audit passes that failed to read MySQL or Redis."}),
	}
}

// Auditor audits the recent items every Interval.
type Auditor struct {
	DB       *sql.DB
	Stock    *stock.Store
	Interval time.Duration
	Metrics  *Metrics
	Log      *slog.Logger
}

// Run audits until ctx is done.
func (a *Auditor) Run(ctx context.Context) error {
	t := time.NewTicker(a.Interval)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, a.Interval*4)
		if err := a.Pass(pctx); err != nil && ctx.Err() == nil {
			a.Metrics.failures.Inc()
			a.Log.Warn("audit pass failed", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass audits each recent item once and updates the gauges.
func (a *Auditor) Pass(ctx context.Context) error {
	rows, err := a.DB.QueryContext(ctx, "SELECT id FROM items ORDER BY id DESC LIMIT ?", MaxItems)
	if err != nil {
		return fmt.Errorf("auditor: list items: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("auditor: list items: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("auditor: list items: %w", err)
	}
	for _, id := range ids {
		rep, err := audit.Item(ctx, a.DB, a.Stock, id)
		if err != nil {
			return fmt.Errorf("auditor: item %d: %w", id, err)
		}
		a.record(rep)
		if !rep.OK {
			a.Log.Warn("invariant violated", "item", id, "violations", rep.Violations)
		}
	}
	a.Metrics.lastRun.SetToCurrentTime()
	return nil
}

func (a *Auditor) record(r audit.Report) {
	item := strconv.FormatInt(r.ItemID, 10)
	m := a.Metrics
	m.stock.WithLabelValues(item, "mysql").Set(float64(r.DBStock))
	m.stock.WithLabelValues(item, "redis").Set(float64(r.RedisStock))
	m.pending.WithLabelValues(item).Set(float64(r.PendingQty))
	m.drift.WithLabelValues(item).Set(float64(r.RedisStock + r.PendingQty - r.DBStock))
	m.orders.WithLabelValues(item, "UNPAID").Set(float64(r.Unpaid))
	m.orders.WithLabelValues(item, "PAID").Set(float64(r.Paid))
	m.orders.WithLabelValues(item, "CANCELLED").Set(float64(r.Cancelled))
	m.violations.WithLabelValues(item).Set(float64(len(r.Violations)))
}
