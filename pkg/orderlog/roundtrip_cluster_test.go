//go:build cluster

package orderlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestGroupRoundTrip on the three-broker cluster: the pipeline's writer
// (acks from all in-sync replicas, here three with two required) publishes
// to partitions led by every broker, two group members with explicit
// commits see every message, and the group ends with no lag, its offsets
// in a __consumer_offsets replicated three times.
func TestClusterGroupRoundTrip(t *testing.T) {
	brokers := testenv.KafkaCluster(t)
	topic, _, group := testenv.Topics(t, 6)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	expectReplicated(ctx, t, brokers, topic, 6)
	// 13 keys: every one of the 6 partitions gets some.
	if partitions := groupRoundTrip(t, brokers, topic, group, 1000, 13); len(partitions) != 6 {
		t.Fatalf("messages came from partitions %v, want all 6", partitions)
	}
}
