package reap

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/stockchange"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// Config is what one reaper needs to know; main fills it from config.Reaper
// and config.Common.
type Config struct {
	// Interval is the pause between the end of one pass and the start of the
	// next (passes never overlap within a replica).
	Interval time.Duration
	// BatchSize is how many expired orders one transaction claims, and how
	// many pending restores one page re-applies.
	BatchSize int
	// OrphanGrace is how old a reservation must be, by the Redis server's
	// clock, before the sweep asks the arbiter to void it.
	OrphanGrace time.Duration
	// StoreTimeout bounds one MySQL statement or Redis call; a transaction
	// gets txCalls of them.
	StoreTimeout time.Duration
	// SweepUnknownItems makes the orphan sweep also scan Redis for
	// reservations of items MySQL does not list, and void them after the
	// grace. Set it when this Redis serves this database alone, as the
	// reaper deployable does; tests that share one Redis among many
	// databases leave it off (or use a Redis of their own), or each would
	// void the others' reservations.
	SweepUnknownItems bool
	// OrphanSweepEvery is how often, at most, the orphan sweep reads every
	// item's reservations, by Redis' clock; 0 is a tenth of OrphanGrace, at
	// most a minute. The sweep costs two Redis calls per item MySQL lists,
	// whatever the item's age, and nothing is voided before the grace, so a
	// tenth of it delays a void by at most that tenth and saves the calls of
	// nine passes in ten (see sweepOrphans).
	OrphanSweepEvery time.Duration
}

// txCalls is how many StoreTimeouts one batch transaction may take: it runs
// four statements plus begin and commit.
const txCalls = 4

// maxBacklogCount caps the backlog gauge's COUNT so it stays cheap.
const maxBacklogCount = 1_000_000

// Reaper runs passes. Several replicas may run at once on the same stores.
type Reaper struct {
	db    *sql.DB
	stock *stock.Store
	log   *slog.Logger
	m     *Metrics
	cfg   Config

	// AfterCommit, when set, is called after each cancel batch has committed
	// in MySQL and before Redis is touched. An error aborts the pass right
	// there, as a crash would: tests inject it to prove that the next pass
	// completes the Redis restore exactly once.
	AfterCommit func(ctx context.Context, cancelled []store.Order) error

	// Clock is the host clock. It only stamps the last-success gauge: no
	// deadline or grace is ever judged by it (orders by MySQL's NOW(3),
	// reservations by Redis' TIME), so a skewed host cannot cancel or void
	// early. Tests skew it to prove that.
	Clock func() time.Time

	// lastUnknownScan is when (Redis' clock) the orphan sweep last scanned
	// Redis for items MySQL does not know; passes never overlap.
	lastUnknownScan time.Time
	// lastSweep is when (Redis' clock) the orphan sweep last read the
	// items' reservations.
	lastSweep time.Time

	// changes finishes the stock changes (restocks, withdraws) that their
	// caller left PENDING between two writes.
	changes *stockchange.Changer
}

// Deps are the stores a reaper works on; the caller owns and closes them.
type Deps struct {
	DB    *sql.DB
	Stock *stock.Store
}

// withDefaults fills the settings left zero: the one place the reaper's
// defaults live.
func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = 2 * time.Second
	}
	if c.OrphanSweepEvery <= 0 {
		c.OrphanSweepEvery = min(c.OrphanGrace/10, time.Minute)
	}
	return c
}

// New returns a reaper on d's stores. Like every component of the pipeline
// it takes its settings, its dependencies, its metrics and its logger, in
// that order.
func New(cfg Config, d Deps, m *Metrics, log *slog.Logger) *Reaper {
	cfg = cfg.withDefaults()
	return &Reaper{db: d.DB, stock: d.Stock, log: log, m: m, cfg: cfg, Clock: time.Now,
		changes: stockchange.New(d.DB, d.Stock, cfg.StoreTimeout, log)}
}

// CheckClock refuses a MySQL session whose NOW(3) is not UTC (see
// ErrSessionClock). main runs it before the first pass.
func (r *Reaper) CheckClock(ctx context.Context) error {
	cctx, cancel := r.callCtx(ctx, 1)
	defer cancel()
	skew, err := store.SessionClockSkew(cctx, r.db)
	if err != nil {
		return err
	}
	if skew != 0 {
		return fmt.Errorf("%w: NOW(3) - UTC_TIMESTAMP(3) = %v (set time_zone='+00:00' in the DSN)", ErrSessionClock, skew)
	}
	return nil
}

// Run passes until ctx is done: the first at once, then Interval after each
// ends. A failed pass is logged and counted and the work is simply found
// again by the next one. Run returns nil on shutdown; a pass in progress
// stops between batches, never between a commit and its Redis restore
// unless a store call fails.
func (r *Reaper) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		r.RunPass(ctx)
		t.Reset(r.cfg.Interval)
	}
}

// RunPass runs one pass and records its metrics and log line; it reports
// whether the pass succeeded.
func (r *Reaper) RunPass(ctx context.Context) bool {
	start := time.Now()
	err := r.Pass(ctx)
	r.m.PassDuration.Observe(time.Since(start).Seconds())
	switch {
	case err == nil:
		r.m.LastSuccess.Set(float64(r.Clock().UnixMilli()) / 1000)
		return true
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		r.log.Info("reaper pass stopped by shutdown", "err", err)
		return false
	default:
		r.m.PassFailures.Inc()
		r.log.Error("reaper pass failed; retrying next interval", "err", err, "interval", r.cfg.Interval.String())
		return false
	}
}

// Pass runs the steps once. Each step runs even if an earlier one
// failed (MySQL cancellations can go on while Redis is down; their restores
// wait in stock_restores), and the errors are joined.
func (r *Reaper) Pass(ctx context.Context) (err error) {
	ctx, span := tracing.Start(ctx, SpanPass, trace.SpanKindInternal)
	defer func() { tracing.Fail(span, err); span.End() }()
	var errs []error
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"re-apply restores", r.reapplyRestores},
		{"finish stock changes", r.finishStockChanges},
		{"cancel expired", r.cancelExpired},
		{"backlog", r.updateBacklog},
		{"orphan sweep", r.sweepOrphans},
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		sctx, span := startStep(ctx, s.name)
		err := s.fn(sctx)
		tracing.Fail(span, err)
		span.End()
		if err != nil {
			errs = append(errs, fmt.Errorf("reap: %s: %w", s.name, err))
		}
	}
	return errors.Join(errs...)
}

// callCtx bounds n store calls. It is detached from ctx's cancellation so a
// shutdown never interrupts a transaction or a restore half way; the pass
// checks ctx between batches instead.
func (r *Reaper) callCtx(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Duration(n)*r.cfg.StoreTimeout)
}

func (r *Reaper) updateBacklog(ctx context.Context) error {
	cctx, cancel := r.callCtx(ctx, 1)
	defer cancel()
	n, err := store.ExpiredBacklog(cctx, r.db, maxBacklogCount)
	if err != nil {
		return err
	}
	r.m.Backlog.Set(float64(n))
	return nil
}
