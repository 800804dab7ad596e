// Package orderlog is flashsale's Kafka contract: topic names, the versioned
// order message, a correctly configured writer, topic creation and consumer
// lag.
//
// It is named for the orders topic, the durable log of accepted orders that
// the ingress appends to and the order writers consume; "queue" in flashsale
// means the waiting room (POST .../queue, flashsale_queue_* metrics), never
// Kafka.
//
// It also owns the dead-letter topic's headers (deadletter.go), the
// partitioner that keeps one stock bucket on one partition (StockBalancer),
// the batched publisher, the trace context carried in a message's headers, and
// Security, the TLS and SASL every Kafka client is built with.
//
// Importers: the ingress, setup and bench commands, pkg/service,
// pkg/admission, pkg/httpapi, pkg/orderwriter and internal/testenv. It imports
// only pkg/config (the Kafka settings) and pkg/reqid (a message's key), never
// pkg/store or pkg/stock: the contract on the wire does not depend on how
// either side stores it.
package orderlog
