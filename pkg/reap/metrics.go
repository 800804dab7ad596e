package reap

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the reaper's Prometheus series. Labels are bounded: the only
// one is store, "mysql" or "redis".
type Metrics struct {
	Cancellations prometheus.Counter
	RestoresMySQL prometheus.Counter
	RestoresRedis prometheus.Counter
	OrphansVoided prometheus.Counter
	Backlog       prometheus.Gauge
	PassDuration  prometheus.Histogram
	LastSuccess   prometheus.Gauge
	PassFailures  prometheus.Counter
	// OrphanGrace is the configured grace, exported so an alert can compare
	// reservation ages with it instead of repeating the number.
	OrphanGrace prometheus.Gauge
}

// NewMetrics registers the reaper's series on reg (built in main, or one per
// test, never the global registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	restores := f.NewCounterVec(prometheus.CounterOpts{
		Name: "flashsale_reaper_restores_total",
		Help: "Cancelled orders whose qty was given back, by store: mysql counts committed restore records, redis counts restores the Lua guard applied (not repeats).",
	}, []string{"store"})
	return &Metrics{
		Cancellations: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_reaper_cancellations_total",
			Help: "UNPAID orders cancelled after their payment window.",
		}),
		RestoresMySQL: restores.WithLabelValues("mysql"),
		RestoresRedis: restores.WithLabelValues("redis"),
		OrphansVoided: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_reaper_orphans_voided_total",
			Help: "Orphaned reservations this reaper voided through the arbiter.",
		}),
		Backlog: f.NewGauge(prometheus.GaugeOpts{
			Name: "flashsale_reaper_backlog_orders",
			Help: "UNPAID orders past their deadline and not yet cancelled, after the last pass (capped count).",
		}),
		PassDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "flashsale_reaper_pass_duration_seconds",
			Help:    "Wall time of one reaper pass, failed or not.",
			Buckets: prometheus.ExponentialBuckets(0.005, 3, 10), // 5ms .. ~98s
		}),
		LastSuccess: f.NewGauge(prometheus.GaugeOpts{
			Name: "flashsale_reaper_last_success_timestamp_seconds",
			Help: "Unix time of the end of the last pass that completed without error.",
		}),
		PassFailures: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_reaper_pass_failures_total",
			Help: "Passes that ended with an error (MySQL or Redis unreachable, ...); they are retried next interval.",
		}),
		OrphanGrace: f.NewGauge(prometheus.GaugeOpts{
			Name: "flashsale_orphan_grace_seconds",
			Help: "FLASHSALE_ORPHAN_GRACE of this reaper: a reservation older than this with no outcome is voided.",
		}),
	}
}
