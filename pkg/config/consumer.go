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
	// GiveUpAfter is how long an item's messages may keep failing with a
	// permanent error (data that does not fit, a code bug; see
	// store.IsPermanent) before the consumer tries them one by one and gives
	// up on those that still fail: dead-lettered and rejected through the
	// arbiter (REJECTED unprocessable). Transient errors (an outage, a
	// read-only failover) never give up. Keep it well below the reaper's
	// FLASHSALE_ORPHAN_GRACE, or the reaper voids the request first.
	GiveUpAfter time.Duration
	// ItemParallelism is how many items' writes (a transaction and its
	// Redis step each) run at once, across the batches in flight.
	ItemParallelism int
	// BatchesInFlight is how many fetched batches may wait for their
	// offsets' commit: the next batch is fetched and written while earlier
	// ones finish and commit in the background.
	BatchesInFlight int
	// SessionTimeout is how long the group coordinator waits for a silent
	// consumer (killed, partitioned, paused) before it gives the consumer's
	// partitions to the others, and how long a rebalance waits for members
	// to rejoin: the time a dead replica's partitions stand still. Kafka's
	// brokers accept 6s to 30m by default (group.min.session.timeout.ms,
	// group.max.session.timeout.ms). Shorter moves partitions sooner and
	// risks a rebalance when a replica is starved of CPU for that long.
	SessionTimeout time.Duration
}

// GroupTimeouts are the consumer group's heartbeat interval, session
// timeout and rebalance timeout for SessionTimeout: heartbeats a tenth of
// the session, at most 3s (kafka-go's default), so a member misses several
// before the coordinator counts it gone.
func (c *Consumer) GroupTimeouts() (heartbeat, session, rebalance time.Duration) {
	return min(c.SessionTimeout/10, 3*time.Second), c.SessionTimeout, c.SessionTimeout
}

// RegisterFlags implements Registerer.
func (c *Consumer) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9101", "ops listen address host:port for /healthz, /readyz, /metrics")
	fs.IntVar(&c.BatchSize, "batch-size", 500, "most messages per write round, 1 to 5000")
	fs.DurationVar(&c.BatchWait, "batch-wait", 20*time.Millisecond, "how long a round waits to fill, a Go duration such as 20ms")
	fs.DurationVar(&c.MaxBackoff, "max-backoff", 5*time.Second, "cap of retry backoff on transient errors, a Go duration")
	fs.IntVar(&c.ItemParallelism, "item-parallelism", 8, "items of the batches in flight written concurrently, 1 to 256 (the MySQL pool grows to match)")
	fs.IntVar(&c.BatchesInFlight, "batches-in-flight", 2, "fetched batches not yet committed, 1 to 16 (1: fetch, write and commit one after the other)")
	fs.DurationVar(&c.SessionTimeout, "group-session-timeout", 30*time.Second, "how long the Kafka group waits for a silent consumer before its partitions go to the others, and a rebalance for members to rejoin: 6s to 30m, a Go duration")
	fs.DurationVar(&c.GiveUpAfter, "give-up-after", 30*time.Second, "how long a message may fail with a permanent error before it is dead-lettered and rejected, a Go duration")
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
	if c.ItemParallelism < 1 || c.ItemParallelism > 256 {
		return fmt.Errorf("FLASHSALE_ITEM_PARALLELISM: %d (expected 1 to 256)", c.ItemParallelism)
	}
	if c.BatchesInFlight < 1 || c.BatchesInFlight > 16 {
		return fmt.Errorf("FLASHSALE_BATCHES_IN_FLIGHT: %d (expected 1 to 16)", c.BatchesInFlight)
	}
	if c.SessionTimeout < 6*time.Second || c.SessionTimeout > 30*time.Minute {
		return fmt.Errorf("FLASHSALE_GROUP_SESSION_TIMEOUT: %v (expected 6s to 30m, the brokers' default bounds)", c.SessionTimeout)
	}
	if c.GiveUpAfter <= 0 {
		return fmt.Errorf("FLASHSALE_GIVE_UP_AFTER: %v (expected a positive duration)", c.GiveUpAfter)
	}
	return nil
}
