package auditor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// MaxItems bounds how many items (the most recently started first) one
// pass audits.
const MaxItems = 50

// Auditor audits the sales that can still change every Interval: those not
// ended, and those that ended less than Settle ago.
type Auditor struct {
	DB       *sql.DB
	Stock    *stock.Store
	Interval time.Duration
	// Settle is how long after its end a sale is still audited: until its
	// last orders were paid or cancelled and its orphaned reservations
	// voided (the reaper's main: the payment window plus the orphan grace
	// plus two reaper passes). After that nothing of the sale changes but
	// by an operator, and auditing it again would only read its orders.
	// Zero: a sale is watched until its end.
	Settle  time.Duration
	Metrics *Metrics
	Log     *slog.Logger

	mu      sync.Mutex         // one pass at a time
	watched map[int64]struct{} // items the last pass listed
	settled map[int64]struct{} // ended sales found settled (settled.go)
}

// maxBusyShare bounds the share of its time the auditor spends in passes:
// after a pass that took d it rests at least d×(1/maxBusyShare − 1), so a
// pass longer than a fifth of Interval spaces the next one out instead of
// following it at once. A pass reads every order of every watched sale, so
// it grows with the sales; once passes outlasted Interval the auditor read
// MySQL without a pause, on the database the sales write to, and making a
// pass cheaper only made the passes more frequent (BENCHMARKS.md, "The live
// audit's checks").
const maxBusyShare = 0.2

// restAfter is how long Run waits after a pass that took took: the rest of
// interval, and at least what keeps the auditor's busy share at
// maxBusyShare.
func restAfter(interval, took time.Duration) time.Duration {
	rest := interval - took
	if least := time.Duration(float64(took) * (1/maxBusyShare - 1)); rest < least {
		rest = least
	}
	return rest
}

// Run audits until ctx is done: a pass every Interval, spaced further apart
// while passes take more than a fifth of it (restAfter). A failed pass is
// followed by the plain rest of Interval: its length is a stalled store's,
// not the audit's work, and the next pass should see the store recover.
func (a *Auditor) Run(ctx context.Context) error {
	spaced := false
	for {
		start := time.Now()
		pctx, cancel := context.WithTimeout(ctx, a.Interval*4)
		err := a.Pass(pctx)
		cancel()
		took := time.Since(start)
		rest := max(a.Interval-took, 0)
		if err != nil && ctx.Err() == nil {
			a.Metrics.failures.Inc()
			a.Log.Warn("audit pass failed", "err", err)
		} else if err == nil {
			rest = restAfter(a.Interval, took)
			if now := took+rest > a.Interval; now != spaced {
				spaced = now
				if spaced {
					a.Log.Info("audit passes spaced out: a pass takes more than a fifth of the interval",
						"pass", took.Round(time.Millisecond).String(), "next_in", rest.Round(time.Millisecond).String(), "interval", a.Interval.String())
				} else {
					a.Log.Info("audit passes back to every interval",
						"pass", took.Round(time.Millisecond).String(), "interval", a.Interval.String())
				}
			}
		}
		t := time.NewTimer(rest)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// Pass audits each watched item once and updates the gauges. An item whose
// audit fails is counted, logged and skipped (it keeps its previous values,
// and the pass is not recorded as a success); the other items are still
// audited, and the error names every item that failed.
func (a *Auditor) Pass(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	sales, err := a.watchedSales(ctx)
	if err != nil {
		return err
	}
	a.watch(sales)
	// One reading of Redis' clock ages every reservation of the pass: the
	// same clock admit.lua stamps them with and the orphan sweep judges by.
	now, err := a.Stock.Client().Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("auditor: redis TIME: %w: %w", stock.ErrUnavailable, err)
	}
	var failed []error
	audited := 0
	for _, sl := range sales {
		if err := ctx.Err(); err != nil {
			failed = append(failed, err)
			break
		}
		id := sl.id
		if a.skip(sl) {
			continue
		}
		audited++
		rep, transient, err := confirm(ctx, func(ctx context.Context) (audit.Report, error) {
			return audit.Item(ctx, a.DB, a.Stock, id)
		}, confirmPause)
		if transient {
			a.Metrics.transient.Inc()
		}
		if err != nil {
			a.Metrics.itemFailures.Inc()
			a.Log.Warn("audit of item failed; skipped", "item", id, "err", err)
			if errors.Is(err, store.ErrNotFound) {
				a.Metrics.forget(id)
			}
			failed = append(failed, fmt.Errorf("item %d: %w", id, err))
			continue
		}
		sig, err := readSignals(ctx, a.DB, a.Stock, rep)
		if err != nil {
			a.Metrics.itemFailures.Inc()
			a.Log.Warn("audit of item failed; skipped", "item", id, "err", err)
			failed = append(failed, fmt.Errorf("item %d: %w", id, err))
			continue
		}
		a.Metrics.record(rep, sig, now)
		a.noteSettled(sl, rep)
		if !rep.OK {
			a.Metrics.reported.WithLabelValues(strconv.FormatInt(id, 10)).Inc()
			a.Log.Warn("invariant violated", "item", id, "violations", rep.Violations)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("auditor: %d of %d items not audited: %w", len(failed), audited, errors.Join(failed...))
	}
	a.Metrics.lastRun.SetToCurrentTime()
	return nil
}

// watchedSales lists the items whose sale has not ended or ended less than
// Settle ago (by MySQL's clock, the one expires_at is judged by), the most
// recently started first, at most MaxItems, each with whether it ended.
// Not by id: ids are the operator's or random, so the highest ids are
// neither the newest sales nor the live ones.
func (a *Auditor) watchedSales(ctx context.Context) ([]sale, error) {
	sales, err := sqlrows.List(ctx, a.DB,
		"SELECT id, ends_at <= NOW(3) FROM items WHERE ends_at > NOW(3) - INTERVAL ? MICROSECOND ORDER BY starts_at DESC, id DESC LIMIT ?",
		[]any{a.Settle.Microseconds(), MaxItems}, func(r sqlrows.Row) (sale, error) {
			var s sale
			return s, r.Scan(&s.id, &s.ended)
		})
	if err != nil {
		return nil, fmt.Errorf("auditor: list items: %w", err)
	}
	return sales, nil
}

// watch makes sales the watched set and forgets the series, and the
// settled mark, of every item that left it.
func (a *Auditor) watch(sales []sale) {
	next := make(map[int64]struct{}, len(sales))
	for _, s := range sales {
		next[s.id] = struct{}{}
	}
	for id := range a.watched {
		if _, ok := next[id]; !ok {
			a.Metrics.forget(id)
			delete(a.settled, id)
		}
	}
	a.watched = next
}
