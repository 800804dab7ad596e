package config

import (
	"flag"
	"fmt"
	"time"
)

// Consumer holds the order writer's settings.
type Consumer struct {
	// MetricsAddr serves /healthz, /readyz and /metrics.
	MetricsAddr string
	// BatchSize is the most messages written in one round.
	BatchSize int
	// BatchWait is how long a round waits to fill up once it has a message.
	BatchWait time.Duration
	// MaxBackoff caps the exponential backoff of transient MySQL errors.
	MaxBackoff time.Duration
	// MaxAttempts is how often a failing non-transient message is retried
	// before it goes to the dead-letter topic.
	MaxAttempts int
}

// RegisterFlags implements Registerer.
func (c *Consumer) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9101", "ops listen address host:port for /healthz, /readyz, /metrics")
	fs.IntVar(&c.BatchSize, "batch-size", 500, "most messages per write round, 1 to 5000")
	fs.DurationVar(&c.BatchWait, "batch-wait", 20*time.Millisecond, "how long a round waits to fill, a Go duration such as 20ms")
	fs.DurationVar(&c.MaxBackoff, "max-backoff", 5*time.Second, "cap of retry backoff on transient errors, a Go duration")
	fs.IntVar(&c.MaxAttempts, "max-attempts", 5, "attempts before a failing message goes to the DLQ, at least 1")
}

// Validate implements Registerer.
func (c *Consumer) Validate() error {
	if err := hostPorts(c.MetricsAddr); err != nil {
		return fmt.Errorf("FLASHSALE_METRICS_ADDR: %v (expected host:port)", err)
	}
	if c.BatchSize < 1 || c.BatchSize > 5000 {
		return fmt.Errorf("FLASHSALE_BATCH_SIZE: %d (expected 1 to 5000)", c.BatchSize)
	}
	if c.BatchWait <= 0 {
		return fmt.Errorf("FLASHSALE_BATCH_WAIT: %v (expected a positive duration)", c.BatchWait)
	}
	if c.MaxBackoff <= 0 {
		return fmt.Errorf("FLASHSALE_MAX_BACKOFF: %v (expected a positive duration)", c.MaxBackoff)
	}
	if c.MaxAttempts < 1 {
		return fmt.Errorf("FLASHSALE_MAX_ATTEMPTS: %d (expected at least 1)", c.MaxAttempts)
	}
	return nil
}
