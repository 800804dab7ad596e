package config

import (
	"flag"
	"fmt"
	"time"
)

// Buckets are the ingress's settings of stock buckets (a hot item split
// over several Redis slots, Kafka keys and MySQL rows; see pkg/rebalance).
type Buckets struct {
	// Max is the highest bucket count PUT /api/v1/admin/items/{id} accepts.
	Max int
	// Wait bounds how long a buyer whose home bucket is empty waits for the
	// rebalancer while other buckets still have stock; then 503
	// stock_moving. Poll is the pause between the looks.
	Wait time.Duration
	Poll time.Duration
}

// HardMaxBuckets is the most buckets a request id can name (reqid.MaxBucket + 1).
const HardMaxBuckets = 1000

// RegisterFlags implements Registerer.
func (c *Buckets) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Max, "max-buckets", 64, "highest stock bucket count an item may be given, 1 to 1000")
	fs.DurationVar(&c.Wait, "bucket-wait", time.Second, "how long a buyer whose home bucket is empty waits for stock from the item's other buckets, a Go duration from 0 to 10s")
	fs.DurationVar(&c.Poll, "bucket-poll", 25*time.Millisecond, "pause between looks while a buyer waits for their bucket to be refilled, a Go duration from 1ms to 1s")
}

// Validate implements Registerer.
func (c *Buckets) Validate() error {
	if c.Max < 1 || c.Max > HardMaxBuckets {
		return fmt.Errorf("FLASHSALE_MAX_BUCKETS: %d (expected 1 to %d)", c.Max, HardMaxBuckets)
	}
	if c.Wait < 0 || c.Wait > 10*time.Second {
		return fmt.Errorf("FLASHSALE_BUCKET_WAIT: %v (expected a duration from 0 to 10s)", c.Wait)
	}
	if c.Poll < time.Millisecond || c.Poll > time.Second {
		return fmt.Errorf("FLASHSALE_BUCKET_POLL: %v (expected a duration from 1ms to 1s)", c.Poll)
	}
	return nil
}
