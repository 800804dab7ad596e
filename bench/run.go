package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// Scenario is one system under test: flashsale's ingress or a baseline
// served by this tool.
type Scenario struct {
	Name     string
	Baseline bool
	Base     string
	// Brokers, when set, are sampled for the orders topic's consumer lag.
	Brokers []string
	// Group and Topic are the consumer group and orders topic whose lag is
	// sampled (default orderlog.GroupID and orderlog.OrdersTopic).
	Group, Topic string
	// ReapWait bounds the wait for the reaper (flashsale only).
	ReapWait time.Duration
	// Metrics, when set, is the ingress's /metrics URL: its Kafka publish
	// histogram is scraped before and after the attack (flashsale only).
	Metrics string
	// ReaperMetrics, when set, is the reaper's /metrics URL: its count of
	// live-audit reports is read before the attack and after the final
	// audit (flashsale only).
	ReaperMetrics string
}

// Workload is what every scenario of one invocation shares.
type Workload struct {
	Settings Settings
	Plan     Plan
	Tokens   Tokens
	// Concurrency overrides Settings.Concurrency (-compare runs all three
	// closed-loop at the same concurrency).
	Concurrency int
	// LagGroup and LagTopic override the sampled group and topic (tests run
	// the pipeline on topics of their own).
	LagGroup, LagTopic string
	// Timeline samples each run once a second for the HTML report. Off by
	// default: the sampler reads the audit every second, a little load that
	// plain benchmark runs should not carry.
	Timeline bool
}

// timelineInterval is the timeline's resolution: per-second rates, as the
// summary reports them.
const timelineInterval = time.Second

// newItemID picks an item id no earlier run used, so reruns never meet old
// buyers or orders.
func newItemID() int64 { return 1_000_000_000 + rand.Int64N(1<<40) }

// RunScenario creates the item (or -items items), attacks, settles, pays, waits for the reaper,
// audits, ends the sale and returns the report. A cancelled ctx (SIGINT) stops the attack
// and the polling but still audits and reports what happened so far; only a
// failure to create the item is an error.
func RunScenario(ctx context.Context, w Workload, sc Scenario) (Report, error) {
	s := w.Settings
	ids := saleItems(s.ItemID, max(1, s.Items))
	itemID := ids[0]
	// A long poll may take its whole wait before the request's own timeout.
	api := &API{Base: sc.Base, Client: NewHTTPClient(64, s.RequestTimeout+s.PollWait), Admin: w.Tokens.Admin}
	if err := createItems(ctx, api, ids, splitUnits(s.Units, len(ids)), s.Buckets); err != nil {
		return Report{}, fmt.Errorf("bench: %s: %w", sc.Name, err)
	}
	audit := func(ctx context.Context) (Audit, error) { return auditItems(ctx, api, ids) }
	n := len(w.Plan.Attempts)
	if s.Requests > 0 {
		n = min(n, s.Requests)
	}
	rep := Report{Scenario: sc.Name, Baseline: sc.Baseline, Target: sc.Base, ItemID: itemID, Items: len(ids),
		Buyers: s.Buyers, Units: s.Units, Planned: n, Checks: []string{}}
	atk := &Attack{Base: sc.Base, ItemIDs: ids, Plan: w.Plan, Tokens: w.Tokens, N: n,
		Rate: s.Rate, Concurrency: w.Concurrency, Duration: s.Duration, Timeout: s.RequestTimeout + s.OrderWait, OrderWait: s.OrderWait}
	if atk.Concurrency > 0 {
		rep.Mode, rep.Concurrency = "concurrency", atk.Concurrency
	} else {
		rep.Mode, rep.Rate = "rate", atk.Rate
	}

	settler := NewSettler(api, w.Tokens, w.Plan.Payers)
	settler.wait = s.PollWait
	rec := NewRecorder(len(w.Plan.Attempts), func(r Result) {
		if r.Attempt >= 0 {
			settler.Track(w.Plan.Attempts[r.Attempt].Buyer, r.RequestID, r.End, r.Status)
		}
	})

	bg, stopBG := context.WithCancel(ctx)
	defer stopBG()
	var wg sync.WaitGroup
	var lag *LagSampler
	if len(sc.Brokers) > 0 {
		var err error
		if lag, err = NewLagSampler(ctx, sc.Brokers, cmp.Or(sc.Group, orderlog.GroupID), cmp.Or(sc.Topic, orderlog.OrdersTopic)); err != nil {
			rep.LagNote = "unavailable: " + err.Error()
			lag = nil
		} else {
			wg.Add(1)
			go func() { defer wg.Done(); lag.Run(bg, 250*time.Millisecond) }()
		}
	} else {
		rep.LagNote = "not applicable (synchronous baseline, no order log)"
	}
	if !s.Quiet {
		wg.Add(1)
		go func() { defer wg.Done(); progress(bg, sc.Name, n, rec, settler, lag) }()
	}
	var sampler *Sampler
	if w.Timeline {
		src := TimelineSources{Recorder: rec, Unsettled: settler.Pending,
			Audit: audit}
		if lag != nil {
			src.Lag = lag
		}
		sampler = NewSampler(src, time.Now(), timelineInterval)
		wg.Add(1)
		go func() { defer wg.Done(); sampler.Run(bg) }()
	}

	attackDone := make(chan struct{})
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		settler.Run(ctx, attackDone, s.PollInterval, s.PollTimeout)
	}()
	pub := startPublishScrape(ctx, sc.Metrics)
	live := startLiveAudit(ctx, sc.ReaperMetrics, ids)
	slog.Info("attack", "scenario", sc.Name, "item", itemID, "attempts", n, "mode", rep.Mode)
	err := atk.Run(ctx, rec)
	attackEnd := time.Now()
	rep.Publish, rep.PublishNote = pub.finish(ctx)
	if sampler != nil {
		sampler.AttackEnded(attackEnd)
	}
	close(attackDone)
	<-settled
	if err != nil && !errors.Is(err, context.Canceled) {
		slog.Warn("attack", "scenario", sc.Name, "err", err)
	}
	rep.Interrupted = ctx.Err() != nil

	if lag != nil && !rep.Interrupted && !sc.Baseline && sc.ReapWait > 0 {
		waitForReaper(ctx, audit, sc.ReapWait)
	}
	stopBG()
	wg.Wait()

	if sampler != nil {
		rep.Timeline = sampler.Timeline()
	}
	rep.Outcomes, rep.All, rep.OtherDetail = rec.Stats()
	rep.Sent = rep.All.Count
	rep.AttackSecs = rec.Elapsed().Seconds()
	rep.Phases = rec.Phases()
	rep.Settle = settler.Stats()
	if !rep.Settle.LastSettled.IsZero() {
		rep.SettleAfterAttackSecs = max(0, rep.Settle.LastSettled.Sub(attackEnd).Seconds())
	}
	if lag != nil {
		peak, samples, lerr := lag.Peak()
		if samples > 0 {
			rep.LagPeak = &peak
		} else if lerr != nil {
			rep.LagNote = "unavailable: " + lerr.Error()
		}
	}
	// The audit runs even after SIGINT: a partial run must still say whether
	// the books balance.
	// 20 s, and 100 ms more per item: a 1,000-item sale's audit is 1,000
	// reads, eight at a time, and the bench reads it again until it passes.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second+time.Duration(len(ids))*100*time.Millisecond)
	defer cancel()
	au, aerr := auditSettled(actx, audit)
	if aerr != nil {
		rep.AuditErr = aerr.Error()
	} else {
		rep.Audit = &au
	}
	var cancelled int64
	if rep.Audit != nil {
		cancelled = rep.Audit.Cancelled
	}
	rep.Checks, rep.Warnings = benchChecks(rec, w.Plan, n, rep.Settle, int64(s.Units)+cancelled)
	rep.LiveAudit, rep.LiveAuditNote = live.finish(ctx)
	if rep.LiveAudit != nil && *rep.LiveAudit > 0 && rep.Audit != nil && rep.Audit.OK {
		rep.Checks = append(rep.Checks, fmt.Sprintf("the reaper's live auditor reported %d violations during the run that the final audit does not show (false alarms: see its log, 'invariant violated')", *rep.LiveAudit))
	}
	rep.Pass = rep.Audit != nil && rep.Audit.OK && len(rep.Checks) == 0
	// The sale is over once it is audited: ending it lets the reaper's live
	// auditor stop watching it when it settled, so the next run on the same
	// stack does not pay for auditing this one (each audit reads all of an
	// item's orders). The baseline servers have no end switch.
	if !sc.Baseline {
		if err := endItems(context.WithoutCancel(ctx), api, ids); err != nil {
			slog.Warn("could not end the sale after its run", "scenario", sc.Name, "err", err)
		}
	}
	return rep, nil
}

// waitForReaper waits, bounded, until the item has no UNPAID orders, so the
// reaper's cancellations and stock restores show in the audit.
func waitForReaper(ctx context.Context, audit func(context.Context) (Audit, error), limit time.Duration) {
	deadline := time.Now().Add(limit)
	logged := false
	for time.Now().Before(deadline) && ctx.Err() == nil {
		au, err := audit(ctx)
		if err == nil && au.Unpaid == 0 && au.Pending == 0 {
			return
		}
		if err == nil && !logged {
			slog.Info("waiting for the reaper to cancel unpaid orders", "unpaid", au.Unpaid, "limit", limit)
			logged = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// auditSettled reads the audit until it passes or ctx ends. The audit reads
// two stores without one snapshot, so a run that just ended can show drift
// for a moment; a real violation persists and is reported as read last.
func auditSettled(ctx context.Context, audit func(context.Context) (Audit, error)) (Audit, error) {
	var last Audit
	var lastErr error
	for i := 0; ; i++ {
		last, lastErr = audit(ctx)
		if lastErr == nil && last.OK {
			return last, nil
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return Audit{}, lastErr
			}
			return last, nil
		case <-time.After(time.Duration(min(i+1, 5)) * 200 * time.Millisecond):
		}
	}
}

// benchChecks are what the buyers themselves can see: every 202 settled
// (I4), no more units ordered than could exist (I1: the item's units plus
// those the reaper gave back by cancelling, which can be sold again), and
// replays answered with their first answer (the Idempotency-Key contract).
func benchChecks(rec *Recorder, plan Plan, n int, st SettleStats, sellable int64) (checks, warnings []string) {
	checks = []string{}
	if st.Unsettled > 0 {
		checks = append(checks, fmt.Sprintf("I4 nothing lost: %d accepted requests still PENDING after the poll timeout (e.g. %v)", st.Unsettled, st.UnsettledIDs))
	}
	if int64(st.OrderedUnits) > sellable {
		checks = append(checks, fmt.Sprintf("I1 no oversell: buyers saw %d units ordered, more than the %d units and cancellations could give", st.OrderedUnits, sellable))
	}
	var double, differ int
	for i := range n {
		a := plan.Attempts[i]
		if a.Kind != Replay {
			continue
		}
		rep, ok1 := rec.Answer(i)
		orig, ok2 := rec.Answer(a.Origin)
		if !ok1 || !ok2 || orig.Outcome != OutAccepted {
			continue
		}
		switch {
		case rep.Outcome == OutAccepted && rep.RequestID != orig.RequestID:
			double++
		case rep.Outcome != OutAccepted && rep.Outcome != OutLimited && rep.Outcome != OutUnavail:
			differ++
		}
	}
	if double > 0 {
		checks = append(checks, fmt.Sprintf("idempotency: %d replays were admitted as a new request", double))
	}
	if differ > 0 {
		warnings = append(warnings, fmt.Sprintf("idempotency: %d replays of an accepted request got another answer than 202", differ))
	}
	return checks, warnings
}
