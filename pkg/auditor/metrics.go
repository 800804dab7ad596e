package auditor

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/flashsale-dev/flashsale/pkg/audit"
)

// Metrics are the auditor's gauges.
type Metrics struct {
	stock        *prometheus.GaugeVec
	pending      *prometheus.GaugeVec
	oldest       *prometheus.GaugeVec
	drift        *prometheus.GaugeVec
	orders       *prometheus.GaugeVec
	violations   *prometheus.GaugeVec
	lastRun      prometheus.Gauge
	failures     prometheus.Counter
	itemFailures prometheus.Counter
	transient    prometheus.Counter
	reported     *prometheus.CounterVec
	buckets      *bucketMetrics
}

// NewMetrics registers the auditor's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		stock: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_units",
			Help: "Units an item still has to sell, per store (mysql, redis)."}, []string{"item", "store"}),
		pending: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_pending_units",
			Help: "Units reserved in Redis whose request has no outcome yet."}, []string{"item"}),
		oldest: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_oldest_reservation_age_seconds",
			Help: "Age, by Redis' clock, of the item's oldest pending reservation (0 with none); the reaper voids it past flashsale_orphan_grace_seconds."}, []string{"item"}),
		drift: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_drift_units",
			Help: "Redis stock plus pending reservations minus MySQL stock; 0 when the stores agree (I3)."}, []string{"item"}),
		orders: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_orders_units",
			Help: "Units in orders per status (UNPAID, PAID, CANCELLED)."}, []string{"item", "status"}),
		violations: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_audit_violations",
			Help: "Invariant violations (I1-I7, I9) found by the last audit of the item."}, []string{"item"}),
		lastRun: f.NewGauge(prometheus.GaugeOpts{Name: "flashsale_audit_last_success_timestamp_seconds",
			Help: "Unix time of the last audit pass that read every item."}),
		failures: f.NewCounter(prometheus.CounterOpts{Name: "flashsale_audit_failures_total",
			Help: "Audit passes that failed to read MySQL or Redis, for the item list or for one item or more."}),
		itemFailures: f.NewCounter(prometheus.CounterOpts{Name: "flashsale_audit_item_failures_total",
			Help: "Item audits that failed and were skipped (the item keeps its previous values; the pass goes on)."}),
		transient: f.NewCounter(prometheus.CounterOpts{Name: "flashsale_audit_transient_total",
			Help: "Item audits whose violation a re-read in the same pass no longer showed (a unit caught between the stores mid-sale); not reported as violations."}),
		reported: f.NewCounterVec(prometheus.CounterOpts{Name: "flashsale_audit_reported_total",
			Help: "Item audits that reported a confirmed invariant violation (logged as 'invariant violated'): 0 over a healthy sale, so any increase is worth a look."}, []string{"item"}),
		buckets: newBucketMetrics(f),
	}
}

// record exports one item's report, with its buckets' (buckets.go); now is
// Redis' clock at the pass.
func (m *Metrics) record(r audit.Report, s bucketSignals, now time.Time) {
	item := strconv.FormatInt(r.ItemID, 10)
	m.stock.WithLabelValues(item, "mysql").Set(float64(r.DBStock))
	m.stock.WithLabelValues(item, "redis").Set(float64(r.RedisStock))
	m.pending.WithLabelValues(item).Set(float64(r.PendingQty))
	age := 0.0
	if !r.OldestReservedAt.IsZero() {
		age = max(0, now.Sub(r.OldestReservedAt).Seconds())
	}
	m.oldest.WithLabelValues(item).Set(age)
	m.drift.WithLabelValues(item).Set(float64(r.RedisStock + r.PendingQty - r.DBStock))
	m.orders.WithLabelValues(item, "UNPAID").Set(float64(r.Unpaid))
	m.orders.WithLabelValues(item, "PAID").Set(float64(r.Paid))
	m.orders.WithLabelValues(item, "CANCELLED").Set(float64(r.Cancelled))
	m.violations.WithLabelValues(item).Set(float64(len(r.Violations)))
	m.buckets.record(r, s, now)
}

// forget deletes every series of an item, so a gauge nobody updates any
// more cannot keep an alert firing (or quiet) on a stale number.
func (m *Metrics) forget(itemID int64) {
	l := prometheus.Labels{"item": strconv.FormatInt(itemID, 10)}
	for _, v := range []*prometheus.GaugeVec{m.stock, m.pending, m.oldest, m.drift, m.orders, m.violations} {
		v.DeletePartialMatch(l)
	}
	m.reported.DeletePartialMatch(l)
	m.buckets.forget(l["item"])
}
