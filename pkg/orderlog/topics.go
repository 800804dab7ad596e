package orderlog

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// TopicSpec is a topic flashsale needs.
type TopicSpec struct {
	Name       string
	Partitions int
}

// Topics returns the topics of the pipeline with the orders topic at
// partitions partitions (which bounds the useful consumer replicas).
func Topics(orders, dlq string, partitions int) []TopicSpec {
	return []TopicSpec{
		{Name: orders, Partitions: partitions},
		{Name: dlq, Partitions: 1},
	}
}

// Ping checks that a broker answers a metadata request, within ctx: the
// dial honours ctx, and so does the request, whose connection gets ctx's
// deadline and is cut when ctx is cancelled (kafka-go's Conn has no context
// of its own, so a SIGSTOPped broker that accepted the connection would
// otherwise hold the caller and its socket forever). Brokers are tried in
// turn, so one silent broker can use up the whole of ctx.
//
// A failure names the setting behind it where it can tell (a refused
// login, an untrusted certificate, a plaintext port where TLS is
// expected), as Security.Ping does; Ping itself is plaintext.
func Ping(ctx context.Context, brokers []string) error {
	return (*Security)(nil).Ping(ctx, brokers)
}

func (s *Security) pingOne(ctx context.Context, d *kafka.Dialer, broker string) error {
	conn, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("kafka %s: %w (%w)", broker, ctx.Err(), err)
		}
		return s.explain(broker, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// A deadline in the past fails the pending read at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Brokers(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (%w)", broker, ctx.Err(), err)
		}
		return s.explain(broker, err)
	}
	return nil
}

// Lag returns, per partition of topic, how many messages the group has not
// committed yet (high watermark - committed offset).
func Lag(ctx context.Context, brokers []string, group, topic string) (map[int]int64, error) {
	return (*Security)(nil).Lag(ctx, brokers, group, topic)
}

// Lag is the package Lag over s; a read Kafka refuses as temporary is
// tried again for about a second (retryTemporary).
func (s *Security) Lag(ctx context.Context, brokers []string, group, topic string) (map[int]int64, error) {
	return retryTemporary(ctx, func() (map[int]int64, error) { return s.lagOnce(ctx, brokers, group, topic) })
}

// TotalLag is the group's lag summed over the topic's partitions: how many
// messages it has yet to commit in all.
func TotalLag(ctx context.Context, brokers []string, group, topic string) (int64, error) {
	return (*Security)(nil).TotalLag(ctx, brokers, group, topic)
}

// TotalLag is the package TotalLag over s.
func (s *Security) TotalLag(ctx context.Context, brokers []string, group, topic string) (int64, error) {
	lag, err := s.Lag(ctx, brokers, group, topic)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, n := range lag {
		total += n
	}
	return total, nil
}

func (s *Security) lagOnce(ctx context.Context, brokers []string, group, topic string) (map[int]int64, error) {
	client := s.Client(brokers)
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("orderlog: metadata: %w", err)
	}
	if len(meta.Topics) != 1 || meta.Topics[0].Error != nil {
		return nil, fmt.Errorf("orderlog: topic %s: %v", topic, meta.Topics)
	}
	var parts []int
	var offReq []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		parts = append(parts, p.ID)
		offReq = append(offReq, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	ends, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: offReq}})
	if err != nil {
		return nil, fmt.Errorf("orderlog: list offsets: %w", err)
	}
	committed, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		return nil, fmt.Errorf("orderlog: offset fetch: %w", err)
	}
	if committed.Error != nil {
		return nil, fmt.Errorf("orderlog: offset fetch: %w", committed.Error)
	}
	done := map[int]int64{}
	for _, p := range committed.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("orderlog: offset fetch partition %d: %w", p.Partition, p.Error)
		}
		done[p.Partition] = p.CommittedOffset
	}
	lag := map[int]int64{}
	for _, p := range ends.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("orderlog: list offsets partition %d: %w", p.Partition, p.Error)
		}
		c := done[p.Partition]
		if c < 0 { // no commit yet: the group starts at the first offset
			c = p.FirstOffset
		}
		lag[p.Partition] = max(0, p.LastOffset-c)
	}
	return lag, nil
}
