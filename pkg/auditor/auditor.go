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

// MaxItems bounds how many items (most recent ids first) one pass audits.
const MaxItems = 50

// Auditor audits the recent items every Interval.
type Auditor struct {
	DB       *sql.DB
	Stock    *stock.Store
	Interval time.Duration
	Metrics  *Metrics
	Log      *slog.Logger

	mu      sync.Mutex         // one pass at a time
	watched map[int64]struct{} // items the last pass listed
}

// Run audits until ctx is done.
func (a *Auditor) Run(ctx context.Context) error {
	t := time.NewTicker(a.Interval)
	defer t.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, a.Interval*4)
		if err := a.Pass(pctx); err != nil && ctx.Err() == nil {
			a.Metrics.failures.Inc()
			a.Log.Warn("audit pass failed", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass audits each recent item once and updates the gauges. An item whose
// audit fails is counted, logged and skipped (it keeps its previous values,
// and the pass is not recorded as a success); the other items are still
// audited, and the error names every item that failed.
func (a *Auditor) Pass(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids, err := a.recentItems(ctx)
	if err != nil {
		return err
	}
	a.watch(ids)
	// One reading of Redis' clock ages every reservation of the pass: the
	// same clock admit.lua stamps them with and the orphan sweep judges by.
	now, err := a.Stock.Client().Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("auditor: redis TIME: %w: %w", stock.ErrUnavailable, err)
	}
	var failed []error
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			failed = append(failed, err)
			break
		}
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
		if !rep.OK {
			a.Metrics.reported.WithLabelValues(strconv.FormatInt(id, 10)).Inc()
			a.Log.Warn("invariant violated", "item", id, "violations", rep.Violations)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("auditor: %d of %d items not audited: %w", len(failed), len(ids), errors.Join(failed...))
	}
	a.Metrics.lastRun.SetToCurrentTime()
	return nil
}

// recentItems lists the MaxItems most recent item ids.
func (a *Auditor) recentItems(ctx context.Context) ([]int64, error) {
	ids, err := sqlrows.List(ctx, a.DB, "SELECT id FROM items ORDER BY id DESC LIMIT ?", []any{MaxItems}, sqlrows.Value[int64])
	if err != nil {
		return nil, fmt.Errorf("auditor: list items: %w", err)
	}
	return ids, nil
}

// watch makes ids the watched set and forgets the series of every item
// that left it.
func (a *Auditor) watch(ids []int64) {
	next := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		next[id] = struct{}{}
	}
	for id := range a.watched {
		if _, ok := next[id]; !ok {
			a.Metrics.forget(id)
		}
	}
	a.watched = next
}
