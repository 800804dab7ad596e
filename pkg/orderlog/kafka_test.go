package orderlog_test

import (
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// TestGroupRoundTrip proves the foundation the pipeline stands on against the
// real broker: a durable (acks=all) producer and two consumer-group members
// with explicit commits see every one of 1,000 messages, and after the
// commits the group has no lag.
func TestGroupRoundTrip(t *testing.T) {
	brokers := testenv.Kafka(t)
	topic, _, group := testenv.Topics(t, 4)
	groupRoundTrip(t, brokers, topic, group, 1000, 7)
}
