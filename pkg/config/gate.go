package config

import (
	"flag"
	"fmt"
	"time"
)

// Gate holds the settings of the reaper's waiting-room gate (pkg/waitroom),
// which moves each queued item's serving position on at the item's
// queue_rate once its sale starts.
type Gate struct {
	// Interval is the pause between the gate's passes: how finely
	// admissions are paced (a rate of 100 a second at 100ms admits 10 at a
	// time). 0 turns the gate off, and no queued item admits anyone.
	Interval time.Duration
	// Lease is how long one replica holds the gate, renewed each pass; a
	// replica that dies is replaced after at most Lease. Two holders at
	// once would still admit at the rate (the advance is one script by
	// Redis' clock): the lease keeps one actor and one set of gauges.
	Lease time.Duration
	// ClaimWindow is how long a waitlist offer holds a released unit for
	// its buyer (pkg/waitroom waitlist.go) before it passes to the next ticket
	// in line.
	ClaimWindow time.Duration
	// MaxInFlight, above 0, derives the pace from the pipeline's headroom:
	// the gate admits nobody more to an item while that many of its orders
	// are reserved and not yet written to MySQL (its consumer lag), so the
	// effective rate is what the consumers commit, up to queue_rate. 0:
	// queue_rate alone.
	MaxInFlight int
}

// RegisterFlags implements Registerer.
func (c *Gate) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Interval, "queue-gate-interval", 100*time.Millisecond, "pause between passes of the waiting room's gate, a Go duration from 0 (off: queued items admit nobody) to 5s")
	fs.DurationVar(&c.ClaimWindow, "queue-claim-window", time.Minute, "how long a waitlist offer of a released unit waits for its buyer's order before it passes to the next ticket in line, a Go duration from 1s to 1h")
	fs.IntVar(&c.MaxInFlight, "queue-max-in-flight", 0, "the waiting room's gate admits nobody more to an item while this many of its orders are reserved and not yet written to MySQL, so admissions follow what the pipeline commits, up to the item's queue_rate; 0 = off (queue_rate alone), up to 1000000")
	fs.DurationVar(&c.Lease, "queue-gate-lease", time.Second, "how long one reaper replica holds the waiting room's gate, a Go duration from 100ms to 1m, above the interval")
}

// Validate implements Registerer.
func (c *Gate) Validate() error {
	if c.Interval < 0 || c.Interval > 5*time.Second {
		return fmt.Errorf("FLASHSALE_QUEUE_GATE_INTERVAL: %v (expected a duration from 0 to 5s)", c.Interval)
	}
	if c.Interval == 0 {
		return nil
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > 1_000_000 {
		return fmt.Errorf("FLASHSALE_QUEUE_MAX_IN_FLIGHT: %d (expected 0, off, to 1000000)", c.MaxInFlight)
	}
	if c.ClaimWindow < time.Second || c.ClaimWindow > time.Hour {
		return fmt.Errorf("FLASHSALE_QUEUE_CLAIM_WINDOW: %v (expected a duration from 1s to 1h)", c.ClaimWindow)
	}
	if c.Lease < 100*time.Millisecond || c.Lease > time.Minute || c.Lease <= c.Interval {
		return fmt.Errorf("FLASHSALE_QUEUE_GATE_LEASE: %v (expected a duration from 100ms to 1m, above FLASHSALE_QUEUE_GATE_INTERVAL %v)", c.Lease, c.Interval)
	}
	return nil
}
