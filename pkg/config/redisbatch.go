package config

import (
	"flag"
	"fmt"
	"time"
)

// RedisBatching is how the ingress coalesces its hot-path Redis calls
// (admission, Idempotency-Key ack, status lookup) into shared pipelines; see
// stock.Coalescer. It is part of Ingress.
type RedisBatching struct {
	// MaxBatch is the most calls in one pipeline; 0 sends every call alone.
	MaxBatch int
	// Window is how long a batch short of MaxBatch waits for more calls.
	Window time.Duration
	// Flushers is how many pipelines may be in flight at once.
	Flushers int
}

// RegisterFlags declares the settings.
func (c *RedisBatching) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.MaxBatch, "redis-batch-max", 128, "most hot-path Redis calls sent in one pipeline, 0 to send every call on its own")
	fs.DurationVar(&c.Window, "redis-batch-window", 0, "how long a Redis batch waits for more calls before it is sent, 0 to never wait (calls then batch only while every flusher is busy), up to 5ms")
	fs.IntVar(&c.Flushers, "redis-batch-flushers", 4, "Redis pipelines the ingress keeps in flight at once, 1 to 64")
}

// Validate checks the ranges.
func (c *RedisBatching) Validate() error {
	if c.MaxBatch < 0 || c.MaxBatch > 4096 {
		return fmt.Errorf("FLASHSALE_REDIS_BATCH_MAX: %d (expected 0 to switch off, or up to 4096)", c.MaxBatch)
	}
	if c.Window < 0 || c.Window > 5*time.Millisecond {
		return fmt.Errorf("FLASHSALE_REDIS_BATCH_WINDOW: %v (expected a duration from 0 to 5ms)", c.Window)
	}
	if c.Flushers < 1 || c.Flushers > 64 {
		return fmt.Errorf("FLASHSALE_REDIS_BATCH_FLUSHERS: %d (expected 1 to 64)", c.Flushers)
	}
	return nil
}
