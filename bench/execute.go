package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

// Execute runs what the settings ask for (one flashsale run, or -compare)
// and returns the output to print. An error means nothing could be measured;
// a failed audit is a report with Pass false, not an error.
func Execute(ctx context.Context, c config.Common, s Settings) (Output, error) {
	start := time.Now()
	plan := NewPlan(s.Buyers, s.DupFraction, s.ReplayFraction, s.PayFraction, s.Seed)
	// Tokens outlive the longest run several times over.
	tokens, err := MintTokens(s.JWTSecret, s.Buyers, 6*time.Hour)
	if err != nil {
		return Output{}, err
	}
	slog.Info("workload ready", "buyers", s.Buyers, "attempts", len(plan.Attempts), "units", s.Units, "took", time.Since(start).Round(time.Millisecond))
	w := Workload{Settings: s, Plan: plan, Tokens: tokens, Concurrency: s.Concurrency, Timeline: s.HTML != ""}
	if s.Compare {
		return RunCompare(ctx, c, w)
	}
	if s.Floor && w.Concurrency == 0 {
		// The floors are closed-loop figures, as -compare's are.
		w.Concurrency = defaultCompareConcurrency
	}
	rep, err := RunScenario(ctx, w, Scenario{Name: "flashsale", Base: s.Target, Brokers: c.Brokers(), Group: c.ConsumerGroup, Topic: c.OrdersTopic,
		ReapWait: s.ReapWait, Metrics: s.IngressMetrics, ReaperMetrics: s.ReaperMetrics})
	if err != nil {
		return Output{}, err
	}
	out := Output{Runs: []Report{rep}, Pass: rep.Pass}
	if s.Floor && ctx.Err() == nil && rep.Sent > 0 {
		out.Floors = MeasureFloors(ctx, c, w, rep)
	}
	return out, nil
}
