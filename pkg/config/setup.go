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
	// Wait is how long setup keeps retrying MySQL and Kafka that are still
	// starting (compose starts them together) before it gives up.
	Wait time.Duration
}

// RegisterFlags implements Registerer.
func (c *Setup) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.TopicPartitions, "topic-partitions", 12, "partitions of the orders topic, 1 to 1000")
	fs.DurationVar(&c.Wait, "wait", 60*time.Second, "how long to wait for MySQL and Kafka to come up, a Go duration")
}

// Validate implements Registerer.
func (c *Setup) Validate() error {
	if c.TopicPartitions < 1 || c.TopicPartitions > 1000 {
		return fmt.Errorf("FLASHSALE_TOPIC_PARTITIONS: %d (expected 1 to 1000)", c.TopicPartitions)
	}
	if c.Wait <= 0 {
		return fmt.Errorf("FLASHSALE_WAIT: %v (expected a positive duration)", c.Wait)
	}
	return nil
}
