// Package admission is the order path of the ingress: sold-out memory fast
// path, in-process load shedding, the Redis admission script (one round
// trip), the synchronous durable Kafka publish, and the arbiter-guarded
// compensation when the publish fails.
//
// It owns the in-process state of that path (the sold-out memory, the flights
// that join copies of one Idempotency-Key, the bucket views and the queue of
// compensations still to retry) and its metrics (flashsale_admissions_total,
// flashsale_kafka_publish_duration_seconds,
// flashsale_kafka_publish_failures_total, flashsale_soldout_cache_hits_total,
// flashsale_redis_wait_short_total, flashsale_bucket_wait_seconds). It owns
// no stored state: the Redis keys and admit.lua are pkg/stock's, the read of
// the buckets across the rebalancer's transfers pkg/bucketview's, the arbiter
// row a failed publish is decided by (request_outcomes, ABORTED) is written
// through pkg/store, the message is pkg/orderlog's and the status it caches
// is pkg/orderstatus's.
//
// Only pkg/httpapi imports it, for the ingress's order route. It never imports
// the HTTP layer (pkg/httpapi, Echo, net/http): it answers with a Result whose
// Outcome the HTTP layer turns into a status code, so everything HTTP stays
// in pkg/httpapi. Nor does it import the other
// deployables' workers (orderwriter, reap, rebalance, the waiting room's
// gate): it meets them
// only through the stores.
package admission
