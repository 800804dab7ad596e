package queue

import (
	"time"

	"github.com/segmentio/kafka-go"
)

// NewWriter returns the one kafka-go Writer a process shares for the orders
// topic, configured for durability:
//
//   - RequiredAcks: RequireAll. A kafka.Writer literal defaults to
//     RequireNone, where a broker crash silently loses an "accepted" order.
//   - Async: false. With Async, errors are dropped unless Completion is set,
//     and a lost publish is lost stock.
//   - BatchTimeout of a few ms instead of the 1s default, so synchronous
//     writes from many handlers batch together without waiting a second.
//   - Balancer: Hash on the key (item id), so one item stays on one partition.
//
// kafka-go has no idempotent producer: its retries can duplicate a message.
// The consumer's arbiter absorbs duplicates.
func NewWriter(brokers []string, topic string, writeTimeout time.Duration) *kafka.Writer {
	return NewWriterWithTransport(brokers, topic, writeTimeout, nil)
}

// NewWriterWithTransport is NewWriter with the connections made by transport
// (nil = kafka-go's default). Tests pass a Transport whose Dial goes through a
// fault injector, so even connections to brokers learned from metadata can be
// cut or stalled.
func NewWriterWithTransport(brokers []string, topic string, writeTimeout time.Duration, transport kafka.RoundTripper) *kafka.Writer {
	return &kafka.Writer{
		Transport:              transport,
		Addr:                   kafka.TCP(brokers...),
		Topic:                  topic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		Async:                  false,
		BatchTimeout:           2 * time.Millisecond,
		BatchSize:              1000,
		MaxAttempts:            3,
		WriteBackoffMin:        20 * time.Millisecond,
		WriteBackoffMax:        200 * time.Millisecond,
		ReadTimeout:            writeTimeout,
		WriteTimeout:           writeTimeout,
		AllowAutoTopicCreation: false,
	}
}
