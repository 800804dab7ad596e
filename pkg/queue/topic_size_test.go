package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/queue"
)

// TestTopicSize: a fresh topic holds 0; after 11 messages spread over its 3
// partitions, 11; a topic that does not exist is an error, not a 0.
func TestTopicSize(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic, _, _ := testenv.Topics(t, 3)
	sec := testenv.KafkaSecurity(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if n, err := sec.TopicSize(ctx, brokers, topic); err != nil || n != 0 {
		t.Fatalf("fresh topic: %d, %v; want 0", n, err)
	}
	w := queue.NewWriter(brokers, topic, 5*time.Second)
	defer w.Close()
	var msgs []kafka.Message
	for i := range 11 {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprint(i)), Value: []byte("x")})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if n, err := sec.TopicSize(ctx, brokers, topic); err != nil || n != 11 {
		t.Fatalf("after 11 messages: %d, %v; want 11", n, err)
	}
	if n, err := sec.TopicSize(ctx, brokers, "test.no-such-topic."+testenv.Suffix()); err == nil {
		t.Fatalf("a missing topic read as %d, no error", n)
	}
}
