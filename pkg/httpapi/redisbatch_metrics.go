package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// RedisBatchSizes registers the histogram of the ingress' coalesced Redis
// pipelines (stock.Coalescer) and returns its observer. Batches of 1 at a
// busy time mean the flushers keep up without queueing; large batches mean
// the syscalls per request fell, and FLASHSALE_REDIS_BATCH_MAX is the cap.
func RedisBatchSizes(reg prometheus.Registerer) func(calls int) {
	h := promauto.With(reg).NewHistogram(prometheus.HistogramOpts{
		Name:    "flashsale_redis_batch_calls",
		Help:    "Hot-path Redis calls (admission, ack, status lookup) sent in one pipeline by the ingress.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 13),
	})
	return func(calls int) { h.Observe(float64(calls)) }
}
