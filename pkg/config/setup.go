package config

import (
	"flag"
	"fmt"
)

// Setup holds the settings of the one-shot setup job (migrations and topics).
type Setup struct {
	// TopicPartitions is the partition count of the orders topic. It bounds
	// the useful number of consumer replicas.
	TopicPartitions int
}

// RegisterFlags implements Registerer.
func (c *Setup) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.TopicPartitions, "topic-partitions", 12, "partitions of the orders topic, 1 to 1000")
}

// Validate implements Registerer.
func (c *Setup) Validate() error {
	if c.TopicPartitions < 1 || c.TopicPartitions > 1000 {
		return fmt.Errorf("FLASHSALE_TOPIC_PARTITIONS: %d (expected 1 to 1000)", c.TopicPartitions)
	}
	return nil
}
