package config

import (
	"flag"
	"fmt"
	"time"
)

// Setup holds the settings of the one-shot setup job (migrations and topics).
type Setup struct {
	// TopicPartitions is the partition count of the orders topic. It bounds
	// the useful number of consumer replicas.
	TopicPartitions int
	// TopicReplication is the replication factor of the topics (0 = min(3,
	// brokers)); an existing topic with fewer replicas is refused.
	TopicReplication int
	// TopicMinInsync is min.insync.replicas of the topics (0 =
	// max(1, replication-1)): the copies a 202 stands on.
	TopicMinInsync int
	// Wait is how long setup keeps retrying MySQL and Kafka that are still
	// starting (compose starts them together) before it gives up.
	Wait time.Duration
}

// RegisterFlags implements Registerer.
func (c *Setup) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.TopicPartitions, "topic-partitions", 12, "partitions of the orders topic, 1 to 1000")
	fs.IntVar(&c.TopicReplication, "topic-replication", 0, "replication factor of the topics, 0 for min(3, brokers)")
	fs.IntVar(&c.TopicMinInsync, "topic-min-insync", 0, "min.insync.replicas of the topics, 0 for max(1, replication - 1)")
	fs.DurationVar(&c.Wait, "wait", 60*time.Second, "how long to wait for MySQL and Kafka to come up, a Go duration")
}

// Validate implements Registerer.
func (c *Setup) Validate() error {
	if c.TopicPartitions < 1 || c.TopicPartitions > 1000 {
		return fmt.Errorf("FLASHSALE_TOPIC_PARTITIONS: %d (expected 1 to 1000)", c.TopicPartitions)
	}
	if c.TopicReplication < 0 || c.TopicReplication > 10 {
		return fmt.Errorf("FLASHSALE_TOPIC_REPLICATION: %d (expected 0 for min(3, brokers), or 1 to 10)", c.TopicReplication)
	}
	if c.TopicMinInsync < 0 || (c.TopicReplication > 0 && c.TopicMinInsync > c.TopicReplication) {
		return fmt.Errorf("FLASHSALE_TOPIC_MIN_INSYNC: %d (expected 0 for max(1, replication - 1), or 1 to the replication factor)", c.TopicMinInsync)
	}
	if c.Wait <= 0 {
		return fmt.Errorf("FLASHSALE_WAIT: %v (expected a positive duration)", c.Wait)
	}
	return nil
}
