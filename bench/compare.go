package main

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// Baseline names as they appear in reports.
const (
	BaselineA = "baseline-a mysql-select-for-update"
	BaselineB = "baseline-b redis-setnx-lock"
	BaselineC = "baseline-c mysql-optimistic-version"
)

// defaultCompareConcurrency is used by -compare when -concurrency is unset:
// comparisons are closed-loop so each system is measured at the same number
// of requests in flight.
const defaultCompareConcurrency = 64

// RunCompare runs the baselines -baselines names (any of a, b and c, in
// that order) and then flashsale, one after the other with the same plan, the
// same concurrency, on the same MariaDB and Redis, and computes the ratios
// to the baselines that ran (a baseline left out has no ratio and is listed
// as skipped). A scenario that cannot start is reported as failed; the
// others still run.
func RunCompare(ctx context.Context, c config.Common, w Workload) (Output, error) {
	if w.Concurrency == 0 {
		w.Concurrency = defaultCompareConcurrency
	}
	names, err := parseBaselines(w.Settings.Baselines)
	if err != nil {
		return Output{}, fmt.Errorf("bench: -baselines %q: %w", w.Settings.Baselines, err)
	}
	db, err := OpenBaselineDB(ctx, c.DSN(), w.Settings.BaselineDB, min(w.Concurrency+8, 128))
	if err != nil {
		return Output{}, err
	}
	defer db.Close()
	rdb := stock.NewClientFrom(c.RedisConn(), c.StoreTimeout, w.Concurrency+8)
	defer rdb.Close()

	orderers := map[string]Orderer{
		BaselineA: ForUpdateOrderer{DB: db},
		BaselineB: RedisLockOrderer{DB: db, Redis: rdb, TTL: 5 * time.Second, Wait: w.Settings.RequestTimeout / 2},
		BaselineC: NewOptimisticOrderer(db, w.Settings.OptimisticRetries),
	}
	out := Output{SkippedBaselines: skippedBaselines(names)}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		rep, err := runBaseline(ctx, w, name, db, orderers[name])
		if err != nil {
			return out, err
		}
		if o, ok := orderers[name].(*OptimisticOrderer); ok {
			rep.Retries = o.Retries()
		}
		out.Runs = append(out.Runs, rep)
	}
	if ctx.Err() == nil {
		sc := Scenario{Name: "flashsale", Base: w.Settings.Target, Brokers: c.Brokers(),
			Group: cmp.Or(w.LagGroup, c.ConsumerGroup), Topic: cmp.Or(w.LagTopic, c.OrdersTopic), Metrics: w.Settings.IngressMetrics, ReaperMetrics: w.Settings.ReaperMetrics}
		rep, err := RunScenario(ctx, w, sc)
		if err != nil {
			slog.Error("flashsale scenario could not start", "err", err)
			rep = Report{Scenario: "flashsale", Target: w.Settings.Target, Buyers: w.Settings.Buyers, Units: w.Settings.Units,
				Mode: "concurrency", Concurrency: w.Concurrency, AuditErr: err.Error(), Checks: []string{"could not start: " + err.Error()}}
		}
		out.Runs = append(out.Runs, rep)
		for _, b := range out.Runs[:len(out.Runs)-1] {
			if rep.Sent > 0 {
				out.Ratios = append(out.Ratios, ratio(rep, b))
			}
		}
	}
	if ctx.Err() == nil {
		if lua, err := MeasureLua(ctx, rdb, w.Concurrency, 3*time.Second); err != nil {
			slog.Warn("bare lua figure", "err", err)
		} else {
			out.Lua = &lua
			if f := out.Runs[len(out.Runs)-1]; lua.PerSec > 0 {
				out.SoldOutVsLua = f.Outcome(OutSoldOut).PerSec / lua.PerSec
			}
		}
	}
	if ctx.Err() == nil && len(out.Runs) > 0 {
		if f := out.Runs[len(out.Runs)-1]; f.Scenario == "flashsale" && f.Sent > 0 {
			out.Floors = MeasureFloors(ctx, c, w, f)
		}
	}
	out.Pass = allPass(out.Runs)
	return out, nil
}

// runBaseline serves one baseline on a loopback port for the length of its
// scenario.
func runBaseline(ctx context.Context, w Workload, name string, db *sql.DB, o Orderer) (Report, error) {
	srv, err := StartBaseline(name, db, o, w.Settings.JWTSecret)
	if err != nil {
		return Report{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Close(sctx); err != nil {
			slog.Warn("baseline shutdown", "err", err)
		}
	}()
	return RunScenario(ctx, w, Scenario{Name: name, Baseline: true, Base: srv.URL})
}

// ratio compares flashsale's run with a baseline's.
func ratio(flash, base Report) Ratio {
	r := Ratio{Baseline: base.Scenario}
	if base.All.PerSec > 0 {
		r.Throughput = flash.All.PerSec / base.All.PerSec
	}
	if flash.All.P99ms > 0 {
		r.P99 = base.All.P99ms / flash.All.P99ms
	}
	return r
}

func allPass(runs []Report) bool {
	for _, r := range runs {
		if !r.Pass {
			return false
		}
	}
	return len(runs) > 0
}
