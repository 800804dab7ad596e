package queue

import (
	"context"
	"fmt"
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
	return NewWriterWithTransport(brokers, topic, writeTimeout, &kafka.Transport{MetadataTTL: metadataTTL})
}

// metadataTTL is how stale the writer's view of partition leaders may get.
// A SIGKILLed leader answers nothing but refused dials, which refresh
// nothing: with kafka-go's default 6 s, publishes kept going to it for up
// to 6 s after a follower had taken over (a 7.8-9.4 s stall on the local
// cluster, faults/kafka_cluster_test.go). One metadata request a second
// per process is nothing next to a sale's produce traffic.
const metadataTTL = time.Second

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

// Warm connects the writer's transport to the brokers and caches the topic's
// metadata before the first buyer arrives. Without it, the first burst of a
// sale (the only moment that matters) queues behind the dial, the API
// version handshake and the metadata fetch: measured here, the first 1,000
// publishes took 177 ms on average instead of 3 ms.
//
// The metadata request warms the bootstrap connection; a ListOffsets of
// every partition is routed to each partition's leader, which opens the
// connections the produce requests will use.
func Warm(ctx context.Context, w *kafka.Writer) error {
	c := &kafka.Client{Addr: w.Addr, Transport: w.Transport}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{w.Topic}})
	if err != nil {
		return fmt.Errorf("queue: warm writer for %s: %w", w.Topic, err)
	}
	var reqs []kafka.OffsetRequest
	for _, t := range meta.Topics {
		for _, p := range t.Partitions {
			reqs = append(reqs, kafka.LastOffsetOf(p.ID))
		}
	}
	if _, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{w.Topic: reqs}}); err != nil {
		return fmt.Errorf("queue: warm writer for %s: %w", w.Topic, err)
	}
	return nil
}
