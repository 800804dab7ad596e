package orderwriter

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the consumer's Prometheus series. Labels are bounded: outcome
// and reason come from fixed sets, partition from the topic's partition count.
type Metrics struct {
	BatchSize     prometheus.Histogram
	BatchDuration prometheus.Histogram
	Outcomes      *prometheus.CounterVec
	DLQ           prometheus.Counter
	Rebalances    prometheus.Counter
	Lag           *prometheus.GaugeVec
	Retries       *prometheus.CounterVec
	CommitErrors  prometheus.Counter
}

// NewMetrics registers the consumer's metrics on reg (a registry built in
// main or a test; no globals).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		BatchSize: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "flashsale_consumer_batch_size",
			Help:    "Messages per write round.",
			Buckets: []float64{1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000},
		}),
		BatchDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "flashsale_consumer_batch_duration_seconds",
			Help:    "Time to write one round to MySQL and Redis and commit its offsets.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		Outcomes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_consumer_outcomes_total",
			Help: "Requests decided by this consumer, by outcome and reason.",
		}, []string{"outcome", "reason"}),
		DLQ: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_consumer_dlq_messages_total",
			Help: "Messages sent to the dead-letter topic.",
		}),
		Rebalances: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_consumer_rebalances_total",
			Help: "Consumer-group rebalances seen by this member (from the reader's stats).",
		}),
		Lag: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_consumer_lag",
			Help: "Messages behind the partition's high watermark, as of the last fetched message.",
		}, []string{"partition"}),
		Retries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_consumer_retries_total",
			Help: "Retried attempts, by kind: transient (MySQL outage, deadlock), race (unique-key race), failure (other errors), redis, dlq.",
		}, []string{"kind"}),
		CommitErrors: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_consumer_commit_errors_total",
			Help: "Offset commits that failed (the messages are redelivered and absorbed by the arbiter).",
		}),
	}
}
