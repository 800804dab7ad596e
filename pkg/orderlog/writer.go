package orderlog

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// NewWriter returns the one kafka-go Writer a process shares for the orders
// topic, configured for durability, with DefaultBatching:
//
//   - RequiredAcks: RequireAll. A kafka.Writer literal defaults to
//     RequireNone, where a broker crash silently loses an "accepted" order.
//   - Async: false. With Async, errors are dropped unless Completion is set,
//     and a lost publish is lost stock; and the ingress answers 202 only
//     once the message is acknowledged, which Async cannot tell it.
//   - Balancer: StockBalancer on the key (item id, and bucket), so one
//     stock row stays on one partition and an item's buckets spread.
//
// kafka-go has no idempotent producer: its retries can duplicate a message.
// The consumer's arbiter absorbs duplicates.
func NewWriter(brokers []string, topic string, writeTimeout time.Duration) *kafka.Writer {
	return NewBatchedWriter(brokers, topic, writeTimeout, DefaultBatching())
}

// NewBatchedWriter is NewWriter with the batching of b (the ingress's
// FLASHSALE_PUBLISH_BATCH_* settings).
func NewBatchedWriter(brokers []string, topic string, writeTimeout time.Duration, b Batching) *kafka.Writer {
	return (*Security)(nil).NewBatchedWriter(brokers, topic, writeTimeout, b)
}

// NewBatchedWriter is the package NewBatchedWriter over s (TLS, SASL).
func (s *Security) NewBatchedWriter(brokers []string, topic string, writeTimeout time.Duration, b Batching) *kafka.Writer {
	w := NewWriterWithTransport(brokers, topic, writeTimeout, s.Transport())
	b.apply(w)
	return w
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
	w := &kafka.Writer{
		Transport:              transport,
		Addr:                   kafka.TCP(brokers...),
		Topic:                  topic,
		Balancer:               &StockBalancer{},
		RequiredAcks:           kafka.RequireAll,
		Async:                  false,
		MaxAttempts:            3,
		WriteBackoffMin:        20 * time.Millisecond,
		WriteBackoffMax:        200 * time.Millisecond,
		ReadTimeout:            writeTimeout,
		WriteTimeout:           writeTimeout,
		AllowAutoTopicCreation: false,
	}
	DefaultBatching().apply(w)
	return w
}

// Batching is how the orders writer coalesces the synchronous publishes of
// concurrent requests. kafka-go keeps one open batch per partition: the
// first message starts its Timeout, and the batch is sent when Timeout
// ends or Size messages or Bytes are in it, whichever comes first; the
// batches of one partition are sent one at a time. Every caller waits for
// its batch's acks, so Timeout is the least a publish costs and the most a
// batch waits for company. A sale's item is one key, so one partition: all
// its admissions share that one queue of batches.
type Batching struct {
	// Size caps the messages of one batch (kafka-go's BatchSize).
	Size int
	// Bytes caps the bytes of one batch (kafka-go's BatchBytes), at most
	// the broker's message.max.bytes (1 MiB by default).
	Bytes int64
	// Timeout is how long a batch waits for more messages (kafka-go's
	// BatchTimeout; kafka-go would wait 1 s when it is 0).
	Timeout time.Duration
	// Compression of each batch; kafka.Compression(0) sends it uncompressed.
	Compression kafka.Compression
}

// DefaultBatching is the batching the ingress ships with, chosen from the
// sweep in BENCHMARKS.md ("Kafka publish"): under a large-stock sale a
// 10 ms wait halved the publish p99 of 0.5-2 ms waits (fewer, larger
// batches queue behind the partition's one produce in flight), for a few
// ms more on a lone publish.
//
// Size is 256, not more, because kafka-go's Writer allocates each batch's
// message slice at the full Size (152 bytes a message, so 152 KB a batch at
// 1,000) however few messages it carries, and a sale's batches carry tens:
// at 1,000 that slice was a quarter of the ingress's allocated bytes; at
// 256 the ingress allocates 16% less per 202 and collects garbage 16-18%
// less often (BENCHMARKS.md, "kafka-go's batch slice"; the maintainers'
// advice for small frequent writes is a smaller size,
// segmentio/kafka-go#1193). The Publisher hands a
// partition at most Size messages per produce round trip, so Size caps one
// partition's publishes from one ingress at Size per round trip: 25,600 a
// second at a 10 ms round trip, above what one partition's consumer drains
// (the hot-item drain, 18,000-28,000 a second); raise it for a broker far
// away (FLASHSALE_PUBLISH_BATCH_SIZE).
func DefaultBatching() Batching {
	return Batching{Size: 256, Bytes: 1 << 20, Timeout: 10 * time.Millisecond}
}

func (b Batching) apply(w *kafka.Writer) {
	w.BatchSize, w.BatchBytes, w.BatchTimeout, w.Compression = b.Size, b.Bytes, b.Timeout, b.Compression
}

// ParseCompression reads a codec name as the settings spell it: none, gzip,
// snappy, lz4 or zstd.
func ParseCompression(name string) (kafka.Compression, error) {
	var c kafka.Compression
	if err := c.UnmarshalText([]byte(name)); err != nil {
		return 0, fmt.Errorf("orderlog: compression %q: %w", name, err)
	}
	return c, nil
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
	_, err := warm(ctx, w)
	return err
}

// warm is Warm, returning the topic's partition ids (known once the
// metadata answered, even if the ListOffsets then failed).
func warm(ctx context.Context, w *kafka.Writer) ([]int, error) {
	parts, err := partitionsOf(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("orderlog: warm writer for %s: %w", w.Topic, err)
	}
	reqs := make([]kafka.OffsetRequest, 0, len(parts))
	for _, id := range parts {
		reqs = append(reqs, kafka.LastOffsetOf(id))
	}
	c := &kafka.Client{Addr: w.Addr, Transport: w.Transport}
	if err := leadersServe(ctx, c, map[string][]kafka.OffsetRequest{w.Topic: reqs}); err != nil {
		// A partition's own error (its leader moving) is in the answer,
		// not in ListOffsets' error: a warm that ignored it said warm
		// while a produce to that partition would be refused.
		return parts, fmt.Errorf("orderlog: warm writer for %s: %w", w.Topic, err)
	}
	return parts, nil
}

// partitionsOf asks the brokers for the partition ids of w's topic.
func partitionsOf(ctx context.Context, w *kafka.Writer) ([]int, error) {
	c := &kafka.Client{Addr: w.Addr, Transport: w.Transport}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{w.Topic}})
	if err != nil {
		return nil, err
	}
	var parts []int
	for _, t := range meta.Topics {
		if t.Error != nil {
			return nil, t.Error
		}
		for _, p := range t.Partitions {
			parts = append(parts, p.ID)
		}
	}
	return parts, nil
}
