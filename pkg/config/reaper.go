package config

import (
	"errors"
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
	// before it is voided. Keep it well above the worst consumer lag; it must
	// be at least MinOrphanGrace (checked by ValidateWith).
	OrphanGrace time.Duration
	// PublishTimeout is the ingress's Kafka publish bound, read under the
	// ingress's name (FLASHSALE_PUBLISH_TIMEOUT) only to check OrphanGrace
	// against it: the reaper cannot see the ingress's setting, so it assumes
	// the same value (the default, unless the deployment sets it for both).
	PublishTimeout time.Duration
	// SweepUnknownItems lets the orphan sweep void reservations of items
	// MySQL does not have (pkg/reap.Config). On by default: a Redis serves
	// one database. Off only where one Redis serves many databases, as in
	// the test suites, where each reaper would void the others' items.
	SweepUnknownItems bool
	// AuditInterval is the pause between invariant audits of the sales that
	// can still change (pkg/auditor), whose results are exported as drift
	// and violation gauges.
	AuditInterval time.Duration
	// Rebalance is the rebalancer's (rebalance.go).
	Rebalance Rebalance
	// Gate is the waiting room's gate's (gate.go).
	Gate Gate
}

// RegisterFlags implements Registerer.
func (c *Reaper) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9102", "ops listen address host:port for /healthz, /readyz, /metrics")
	fs.DurationVar(&c.Interval, "reap-interval", 2*time.Second, "pause between reaper passes, a Go duration such as 2s")
	fs.IntVar(&c.BatchSize, "reap-batch", 500, "expired orders claimed per transaction, 1 to 5000")
	fs.DurationVar(&c.OrphanGrace, "orphan-grace", 10*time.Minute, "age after which a reservation with no outcome is voided, a Go duration")
	fs.BoolVar(&c.SweepUnknownItems, "sweep-unknown-items", true, "void reservations of items MySQL does not have after the orphan grace; false only when one Redis serves several databases")
	fs.DurationVar(&c.AuditInterval, "audit-interval", 15*time.Second, "pause between invariant audits exported as metrics, a Go duration")
	fs.DurationVar(&c.PublishTimeout, "publish-timeout", 3*time.Second, "the ingress's Kafka publish timeout, which the orphan grace must exceed; set it as on the ingress, a Go duration")
	c.Rebalance.RegisterFlags(fs)
	c.Gate.RegisterFlags(fs)
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
	if c.PublishTimeout <= 0 {
		return fmt.Errorf("FLASHSALE_PUBLISH_TIMEOUT: %v (expected a positive duration, the ingress's value)", c.PublishTimeout)
	}
	return errors.Join(c.Rebalance.Validate(), c.Gate.Validate())
}

// MinOrphanGrace is the shortest orphan grace that cannot void a reservation
// whose ingress may still answer 202 for it: twice the longest an ingress
// holds a reservation before that answer (the admission call, the publish
// and the call recording its ack, each bounded by its timeout). The factor
// two is the margin for scheduling pauses and for the reservation being
// stamped when the admission script runs, not when the request arrived.
//
// It does not cover consumer lag: a message written after the grace is
// dropped and its 202 ends REJECTED expired_reservation, so keep the grace
// well above the lag you plan to ride out (docs/configuration.md). Nor a
// message kafka-go delivers after the publish timeout: that request was
// answered 503 outcome_unknown, and a void is one of its possible outcomes.
func MinOrphanGrace(publishTimeout, storeTimeout time.Duration) time.Duration {
	return 2 * (publishTimeout + 2*storeTimeout)
}

// ValidateWith checks the reaper's settings against the shared ones: the
// orphan grace must be at least MinOrphanGrace. Parse runs it when one
// process parses both.
func (c *Reaper) ValidateWith(common Common) error {
	if least := MinOrphanGrace(c.PublishTimeout, common.StoreTimeout); c.OrphanGrace < least {
		return fmt.Errorf("FLASHSALE_ORPHAN_GRACE: %v voids reservations an ingress may still answer 202 for"+
			" (expected at least 2 × (FLASHSALE_PUBLISH_TIMEOUT %v + 2 × FLASHSALE_STORE_TIMEOUT %v) = %v)",
			c.OrphanGrace, c.PublishTimeout, common.StoreTimeout, least)
	}
	return nil
}
