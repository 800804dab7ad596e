// Package reqid makes and parses request ids.
//
// A request id names one admitted order attempt everywhere: the Redis
// reservation, the Kafka message, the arbiter row, the order. It embeds the
// item id and, for a bucketed item, the stock bucket the request was admitted
// in ("<item>-<time><random>" or "<item>.<bucket>-<time><random>"), so a
// status poll finds the bucket's Redis slot (and so its Redis Cluster node),
// and the consumer the bucket's stock row, from the id alone, without MySQL.
// Bucket 0 is written without its suffix, so an unbucketed item's ids are
// what they were before buckets existed.
//
// It owns the id's format and no state. Importers: everything that names a
// request (pkg/stock, pkg/orderlog, pkg/admission, pkg/audit, pkg/httpapi,
// internal/history, the bench tool). It imports nothing but the standard
// library, so any of them can.
package reqid
