package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// A test's topics are deleted when it ends: a local stack that keeps every
// test's topics slows down run after run (1,911 topics, 2,466 partitions
// after three make test runs: pkg/httpapi took 290 s and failed on
// timeouts; 49 s with them deleted).
func TestTopicsAreDeletedWhenTheTestEnds(t *testing.T) {
	var orders, dlq string
	t.Run("user", func(t *testing.T) { orders, dlq, _ = Topics(t, 3) })
	client := KafkaSecurity(t).Client(Kafka(t))
	Eventually(t, 30*time.Second, 200*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{orders, dlq}})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, tp := range md.Topics {
			if tp.Error == nil {
				left++
			}
		}
		return left == 0
	}, "some of the test's topics %s, %s still exist after it ended", orders, dlq)
}
