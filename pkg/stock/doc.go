// Package stock owns flashsale's per-item Redis state: the stock counter,
// sale metadata, buyer set, pending reservations, idempotency answers and
// restore guards, and the Lua scripts (one file per operation, under lua/)
// that change them atomically. It names every key of a bucket, the transfer
// guards and marks too, but moving units between buckets is pkg/rebalance's,
// with its own scripts and lease, and reading the buckets across those moves
// (the snapshot the ingress judges "sold out" by, the marks, the want flags)
// is pkg/bucketview's; this package reads each bucket's stock (BucketStocks),
// which that snapshot brackets with the marks.
//
// Every key of one item's stock bucket carries the bucket's hash tag
// ({item:<id>} for bucket 0, {item:<id>:b<n>} for bucket n), so all keys one
// script touches live in one Redis Cluster slot, and the buckets of a hot
// item spread over slots (buckets.go).
//
// It names the waiting room's keys (QueueKeysOf, queuekeys.go, and each
// bucket's share of the waitlist, Keys.Waitlist, Offers, Claims), because
// its own scripts touch some of them in the same step (admit.lua claims a
// waitlist offer in the buyer's home bucket, restore.lua and release.lua
// fill the pool of the bucket a unit is released in, warm.lua gives a
// share's units back to its bucket's stock); taking tickets, moving the gate and offering the
// pool are pkg/waitroom's, with its own scripts run through Eval. It names
// the status cache's keys and channel (Keys.Status, Keys.StatusChannel) and
// the stock change guards (Keys.StockChangeGuard) by the same rule as every
// key of a bucket; the cache, its scripts and the status subscription are
// pkg/orderstatus's, run through Eval and RunBatch (its lookup.lua and
// status_mark.lua read the reservations hash), and a restock's or withdraw's
// change of a bucket's stock is pkg/stockchange's, with its own script. It
// also names and changes the holder bitmap, the per-user rate window, the
// want flags, the tally hash's name (pkg/tally writes it) and the set of
// warmed items (WarmedItems). Two kinds of key are not its: the leases
// (pkg/lease) and the per-IP rate-limit counters (pkg/httpapi).
//
// Nearly every package that touches Redis imports it: pkg/admission,
// pkg/orderstatus, pkg/orderwriter, pkg/reap, pkg/rebalance, pkg/waitroom,
// pkg/catalog, pkg/stockchange, pkg/bucketview, pkg/tally, pkg/audit,
// pkg/auditor, pkg/httpapi, pkg/service, pkg/startup, internal/testenv and
// the ingress, consumer, reaper and bench commands. It imports only
// pkg/config (the Redis settings) and pkg/reqid (the bucket in a request id),
// never pkg/store, pkg/orderlog or the HTTP layer: it is handed a Redis
// client and knows nothing of MySQL or Kafka. Nor does it import a feature
// that runs over it (pkg/waitroom, pkg/orderstatus, pkg/stockchange,
// pkg/bucketview): they import it.
package stock
