// Package queue is flashsale's Kafka contract: topic names, the versioned
// order message, a correctly configured writer, topic creation and consumer
// lag.
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
package queue
