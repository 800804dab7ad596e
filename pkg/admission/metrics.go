package admission

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the admission path's instruments.
type Metrics struct {
	admissions      *prometheus.CounterVec
	publishDuration prometheus.Histogram
	publishFailures prometheus.Counter
	soldOutHits     prometheus.Counter
	waitShort       prometheus.Counter
	bucketWaits     *prometheus.HistogramVec
	moveWaits       *prometheus.CounterVec
}

// NewMetrics registers the admission metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		admissions: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_admissions_total",
			Help: "Order admission attempts by outcome.",
		}, []string{"outcome"}),
		publishDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name: "flashsale_kafka_publish_duration_seconds",
			Help: "Duration of one synchronous Kafka publish of an admitted order, acks from all in-sync replicas.",
			// Fine below 10 ms, where a batch timeout of 0.5-5 ms puts the
			// publishes: bench's p50/p99 of them (and the sweep that chose
			// FLASHSALE_PUBLISH_BATCH_TIMEOUT) interpolate within a bucket.
			Buckets: []float64{.0005, .001, .0015, .002, .003, .004, .005, .0075, .01, .015, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		publishFailures: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_kafka_publish_failures_total",
			Help: "Kafka publishes that failed or timed out; each aborts its request through the arbiter.",
		}),
		soldOutHits: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_soldout_cache_hits_total",
			Help: "Sold-out answers given from process memory without a Redis round trip.",
		}),
		bucketWaits: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flashsale_bucket_wait_seconds",
			Help:    "Waits of buyers whose home bucket was empty while other buckets of the item had stock, by how they ended: refilled (stock arrived), sold_out (every bucket empty), timed_out (FLASHSALE_BUCKET_WAIT passed: 503 stock_moving), error.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"result"}),
		moveWaits: f.NewCounterVec(prometheus.CounterOpts{
			Name: "flashsale_admission_slot_move_waits_total",
			Help: "Admissions that met a Redis Cluster reshard of their item's slot (TRYAGAIN, ASK or MOVED: the script ran nothing) and waited it out, by how the wait ended: through (the script ran), gave_up (FLASHSALE_REDIS_MOVE_WAIT passed or the request ended: 503).",
		}, []string{"outcome"}),
		waitShort: f.NewCounter(prometheus.CounterOpts{
			Name: "flashsale_redis_wait_short_total",
			Help: "Admissions whose reservation fewer replicas than FLASHSALE_REDIS_WAIT_REPLICAS acknowledged within FLASHSALE_REDIS_WAIT_TIMEOUT (admitted anyway).",
		}),
	}
}
