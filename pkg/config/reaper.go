package config

import (
	"flag"
	"fmt"
	"time"
)

// Reaper holds the settings of the expiry and orphan sweeper.
type Reaper struct {
	// MetricsAddr serves /healthz, /readyz and /metrics.
	MetricsAddr string
	// Interval is the pause between passes.
	Interval time.Duration
	// BatchSize is how many expired orders one transaction claims.
	BatchSize int
	// OrphanGrace is how old a Redis reservation without an outcome must be
	// before it is voided. Keep it well above the worst consumer lag.
	OrphanGrace time.Duration
	// AuditInterval is the pause between invariant audits of recent items,
	// whose results are exported as drift and violation gauges.
	AuditInterval time.Duration
}

// RegisterFlags implements Registerer.
func (c *Reaper) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9102", "ops listen address host:port for /healthz, /readyz, /metrics")
	fs.DurationVar(&c.Interval, "reap-interval", 2*time.Second, "pause between reaper passes, a Go duration such as 2s")
	fs.IntVar(&c.BatchSize, "reap-batch", 500, "expired orders claimed per transaction, 1 to 5000")
	fs.DurationVar(&c.OrphanGrace, "orphan-grace", 10*time.Minute, "age after which a reservation with no outcome is voided, a Go duration")
	fs.DurationVar(&c.AuditInterval, "audit-interval", 15*time.Second, "pause between invariant audits exported as metrics, a Go duration")
}

// Validate implements Registerer.
func (c *Reaper) Validate() error {
	if err := hostPorts(c.MetricsAddr); err != nil {
		return fmt.Errorf("FLASHSALE_METRICS_ADDR: %v (expected host:port)", err)
	}
	if c.Interval <= 0 {
		return fmt.Errorf("FLASHSALE_REAP_INTERVAL: %v (expected a positive duration)", c.Interval)
	}
	if c.BatchSize < 1 || c.BatchSize > 5000 {
		return fmt.Errorf("FLASHSALE_REAP_BATCH: %d (expected 1 to 5000)", c.BatchSize)
	}
	if c.AuditInterval < time.Second {
		return fmt.Errorf("FLASHSALE_AUDIT_INTERVAL: %v (expected at least 1s)", c.AuditInterval)
	}
	if c.OrphanGrace < time.Second {
		return fmt.Errorf("FLASHSALE_ORPHAN_GRACE: %v (expected at least 1s)", c.OrphanGrace)
	}
	return nil
}
