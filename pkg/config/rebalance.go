package config

import (
	"flag"
	"fmt"
	"time"
)

// Rebalance holds the settings of the reaper's rebalancer, which moves
// stock between the buckets of a bucketed item toward the buckets whose
// buyers find them short (pkg/rebalance).
type Rebalance struct {
	// Interval is the pause between passes; 0 turns the rebalancer off (a
	// bucketed item then sells each bucket's own stock only). Keep it well
	// below the ingress's FLASHSALE_BUCKET_WAIT: a buyer waits about one
	// pass for stock.
	Interval time.Duration
	// PassTimeout bounds one pass; a transfer the pass leaves open is
	// finished by the next one.
	PassTimeout time.Duration
	// Lease is how long one replica holds the right to rebalance, renewed
	// each pass (0: every replica rebalances; safe, just more moves). A
	// replica that dies is replaced after at most Lease.
	Lease time.Duration
}

// RegisterFlags implements Registerer.
func (c *Rebalance) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Interval, "rebalance-interval", 100*time.Millisecond, "pause between passes of the rebalancer that moves stock between an item's buckets, a Go duration from 0 (off) to 10s")
	fs.DurationVar(&c.PassTimeout, "rebalance-pass-timeout", 5*time.Second, "bound on one rebalancer pass, a Go duration from 100ms to 1m")
	fs.DurationVar(&c.Lease, "rebalance-lease", time.Second, "how long one reaper replica holds the right to rebalance, a Go duration from 0 (every replica rebalances) to 1m")
}

// Validate implements Registerer.
func (c *Rebalance) Validate() error {
	if c.Interval < 0 || c.Interval > 10*time.Second {
		return fmt.Errorf("FLASHSALE_REBALANCE_INTERVAL: %v (expected a duration from 0 to 10s)", c.Interval)
	}
	if c.Interval == 0 {
		return nil // off: the rest is unused
	}
	if c.PassTimeout < 100*time.Millisecond || c.PassTimeout > time.Minute {
		return fmt.Errorf("FLASHSALE_REBALANCE_PASS_TIMEOUT: %v (expected a duration from 100ms to 1m)", c.PassTimeout)
	}
	if c.Lease < 0 || c.Lease > time.Minute {
		return fmt.Errorf("FLASHSALE_REBALANCE_LEASE: %v (expected a duration from 0 to 1m)", c.Lease)
	}
	if c.Lease > 0 && c.Lease <= c.Interval {
		return fmt.Errorf("FLASHSALE_REBALANCE_LEASE: %v (expected above FLASHSALE_REBALANCE_INTERVAL %v, or 0: the holder renews it each pass)", c.Lease, c.Interval)
	}
	return nil
}
