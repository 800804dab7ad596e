package queue

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// TopicSize returns how many messages topic holds: the sum over its
// partitions of last - first offset. For the dead-letter topic that is the
// letters an operator has to look at (nobody consumes it, so a consumer
// group's lag would say nothing); retention deletes old ones, and the first
// offset moves with it. A read Kafka refuses as temporary is tried again
// for about a second, as Lag's is.
func (s *Security) TopicSize(ctx context.Context, brokers []string, topic string) (int64, error) {
	return retryTemporary(ctx, func() (int64, error) { return s.topicSizeOnce(ctx, brokers, topic) })
}

func (s *Security) topicSizeOnce(ctx context.Context, brokers []string, topic string) (int64, error) {
	client := s.Client(brokers)
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("queue: metadata: %w", err)
	}
	if len(meta.Topics) != 1 {
		return 0, fmt.Errorf("queue: topic %s: %d topics in the metadata", topic, len(meta.Topics))
	}
	if err := meta.Topics[0].Error; err != nil {
		return 0, fmt.Errorf("queue: topic %s: %w", topic, err)
	}
	var req []kafka.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		req = append(req, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	offs, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: req}})
	if err != nil {
		return 0, fmt.Errorf("queue: list offsets: %w", err)
	}
	var n int64
	for _, p := range offs.Topics[topic] {
		if p.Error != nil {
			return 0, fmt.Errorf("queue: list offsets %s partition %d: %w", topic, p.Partition, p.Error)
		}
		n += max(0, p.LastOffset-p.FirstOffset)
	}
	return n, nil
}
