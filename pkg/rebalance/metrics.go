package rebalance

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the rebalancer's series. The one label, result, has five
// values; items and buckets are not labels (the audit's per-bucket gauges
// show where stock is).
type Metrics struct {
	// Done, Abandoned: transfers this pass planned that it finished, by
	// how. Resumed: open transfers found at the start of a pass (a crashed
	// or interrupted mover's) that it finished. Failed: drives that stopped
	// on an error; the transfer stays open for the next pass.
	Done, Abandoned, Resumed, Failed prometheus.Counter
	// Short: transfers whose MySQL step found the donor's row short of
	// what Redis took (Redis above MySQL, a broken invariant): cut to what
	// MySQL has, the Redis donor reconciled down (FlashsaleTransferCutShort).
	Short prometheus.Counter
	// Units counts units moved by transfers that reached DONE: what moved,
	// which for a transfer the MySQL step cut is less than was planned.
	Units        prometheus.Counter
	PassDuration prometheus.Histogram
	PassFailures prometheus.Counter
	// LeaseHeld is 1 while this replica holds the rebalance lease.
	LeaseHeld prometheus.Gauge
}

// NewMetrics registers the rebalancer's series on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	transfers := f.NewCounterVec(prometheus.CounterOpts{
		Name: "flashsale_bucket_transfers_total",
		Help: "Transfers of stock between an item's buckets, by result: done or abandoned (planned and finished in the same pass), resumed (an open transfer a previous mover left, finished now), failed (stopped on an error, left open), short (MySQL's donor had less than Redis took: a broken invariant; moved what MySQL has and reconciled the Redis donor down).",
	}, []string{"result"})
	return &Metrics{
		Done:      transfers.WithLabelValues("done"),
		Abandoned: transfers.WithLabelValues("abandoned"),
		Resumed:   transfers.WithLabelValues("resumed"),
		Failed:    transfers.WithLabelValues("failed"),
		Short:     transfers.WithLabelValues("short"),
		Units: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_bucket_transfer_units_total",
			Help: "Units moved between buckets by transfers that reached DONE (what moved: less than planned for a transfer cut because MySQL's donor had less than Redis took).",
		}),
		PassDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "flashsale_rebalance_pass_duration_seconds",
			Help:    "Wall time of one rebalancer pass, failed or not (passes of a replica without the lease are not observed).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 10), // 1ms .. ~3.8s
		}),
		PassFailures: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_rebalance_pass_failures_total",
			Help: "Rebalancer passes that ended with an error (logged); the work is found again by the next pass.",
		}),
		LeaseHeld: f.NewGauge(prometheus.GaugeOpts{
			Name: "flashsale_rebalance_lease_held",
			Help: "1 while this reaper replica holds the rebalance lease (FLASHSALE_REBALANCE_LEASE), else 0.",
		}),
	}
}
