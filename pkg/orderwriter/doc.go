// Package orderwriter is the consumer's work: a kafka-go consumer-group
// member that turns admitted requests (orderlog.OrderMessage) into orders in
// MySQL, in batches, exactly once in effect.
//
// # Delivery
//
// Messages are fetched with FetchMessage (never ReadMessage, which commits
// before processing) and offsets are committed explicitly, per partition, only
// up to the last message whose MySQL transaction has committed and whose Redis
// after-commit step is done. Delivery is therefore at least once; duplicates,
// redeliveries after a crash and stale messages after a rebalance are absorbed
// by the arbiter table (request_outcomes), never by memory: a request already
// decided is skipped, and only its idempotent Redis step is replayed.
//
// # Batches
//
// A round gathers up to BatchSize messages or waits BatchWait, groups them by
// item and writes each item in ONE READ COMMITTED transaction: multi-row order
// INSERT and outcome INSERT, then a single stock CAS on the hot items row (the
// INSERTs come first so the row lock is held only for the UPDATE and COMMIT).
// If the CAS finds less stock than Redis admitted, the transaction is rolled
// back and the item is decided request by request under SELECT ... FOR UPDATE.
//
// A round of several items (stock rows) is written set-based instead
// (BatchWriter): all its items in ONE transaction, one statement per step
// across items (decisions, items, buyers, order INSERT, outcome INSERT,
// read-back) and one CAS UPDATE of items for every unbucketed row, rows in id
// order. Items short of stock roll it back and go the one-item way above
// while the rest are tried set-based again; any error other than a lost race
// sends the round's items the one-item way, each with its own retries and
// give-up. The Redis step of the round is then one pipelined step for all.
//
// # Overlap
//
// The items of a batch are written concurrently (ItemParallelism item
// writes at a time, across batches), the next batch is fetched and written
// while earlier ones finish (BatchesInFlight), and offsets are committed in
// the background. Batches may finish out of order; the commit loop commits
// per partition only the prefix whose every message is done, so a crash
// redelivers at most BatchesInFlight batches and never loses one. Two
// batches of one hot item may be in their transactions at once: they meet
// only at the stock CAS, as two replicas after a rebalance do.
//
// # Scaling
//
// Kafka assigns each partition of the orders topic to exactly one member of
// the group, so the number of useful replicas is bounded by the partition
// count (FLASHSALE_TOPIC_PARTITIONS, 12 by default): replicas beyond it sit
// idle as hot standbys. Messages are keyed "<item>.<bucket>" and
// orderlog.StockBalancer puts bucket b of an item b partitions past the item's
// own, so one bucket's requests share one partition and are written by one
// replica at a time, while an item of n buckets spreads over up to n
// partitions and so n replicas (docs/design.md "Stock buckets"); an item of
// one bucket is written by one replica. A rebalance (a replica started or
// stopped) redelivers whatever was fetched but not committed; the arbiter
// makes that harmless. To scale past the partition count, add partitions
// (which moves buckets between partitions: do it between sales).
//
// # Ownership and imports
//
// It owns the consumer's loop, its dead-letter writes (dlq.go), the group lag
// watch (lagwatch.go) and the flashsale_consumer_* metrics. The statements are
// pkg/store's (orderwrite.go, batchwrite.go), the Redis after-commit steps
// pkg/stock's and the status it caches pkg/orderstatus's.
//
// Importers: the consumer's main and the bench tool, which runs in-process
// replicas to measure a drain (bench/drain_replicas.go). It imports pkg/orderlog,
// pkg/store, pkg/stock, pkg/orderstatus and pkg/tracing, never the HTTP layer,
// pkg/admission or the reaper's packages: it meets them only through the topic
// and the stores.
package orderwriter
