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
	Retries       *prometheus.CounterVec
	CommitErrors  prometheus.Counter
	// GroupLag is the whole group's lag from committed offsets, polled on
	// a timer: it grows while a round is stuck, when nothing else moves.
	GroupLag        *prometheus.GaugeVec
	LagPollFailures prometheus.Counter
	// fetchLag is this member's lag as of its last fetched messages.
	fetchLag *partitionGauge
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
			Help:    "Time to write one round to MySQL and Redis (its offsets are committed in the background afterwards).",
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
		fetchLag: newPartitionGauge(f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_consumer_lag",
			Help: "Messages behind the partition's high watermark, as of the last message this member fetched from it; set when a round ends, dropped for a partition not fetched for a minute (moved to another member, or idle). For alerts use flashsale_consumer_group_lag.",
		}, []string{"partition"})),
		GroupLag: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flashsale_consumer_group_lag",
			Help: "Messages of the partition the group has not committed (high watermark - committed offset), polled from the broker every few seconds whatever the writes do. Every member exports the same group-wide series: aggregate with max by (partition).",
		}, []string{"partition"}),
		LagPollFailures: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_consumer_group_lag_poll_failures_total",
			Help: "Polls of the group's committed lag that failed or timed out (the last values stay a few polls, then are dropped).",
		}),
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
