package main

import (
	"context"
	"fmt"
	"io"
)

// BotsComparison is -bots-compare's report: the same mix of humans and bots
// on two fresh items in one invocation, first come first served and then
// with the waiting room, so the bots' share and the admission's latency are
// compared on the same machine, accounts and moment.
type BotsComparison struct {
	FirstComeFirstServed BotsReport `json:"first_come_first_served"`
	Queue                BotsReport `json:"queue"`
	// AdmissionP99CostMS is the p99 round trip of the queue run's 202s
	// (orders with an admission grant) minus the first-come-first-served
	// run's (without one): the queue's cost on admission (goal <= 5 ms).
	AdmissionP99CostMS float64 `json:"admission_p99_cost_ms"`
	Pass               bool    `json:"pass"`
}

// RunBotsCompare runs both modes one after the other with one set of
// accounts and one client (sized for the queue's long polls).
func RunBotsCompare(ctx context.Context, s Settings, bs BotSettings) (BotsComparison, error) {
	var cmp BotsComparison
	g, err := newBotsRig(ctx, s, bs, queueConns(s, bs))
	if err != nil {
		return cmp, err
	}
	if cmp.FirstComeFirstServed, err = g.firstComeFirstServed(ctx, g.itemID(true)); err != nil {
		return cmp, err
	}
	if cmp.Queue, err = g.queued(ctx, g.itemID(true)); err != nil {
		return cmp, err
	}
	cmp.AdmissionP99CostMS = cmp.Queue.Admission.P99ms - cmp.FirstComeFirstServed.Admission.P99ms
	cmp.Pass = cmp.FirstComeFirstServed.Pass && cmp.Queue.Pass
	return cmp, nil
}

func runBotsCompare(ctx context.Context, s Settings, bs BotSettings, w io.Writer) error {
	cmp, err := RunBotsCompare(ctx, s, bs)
	if err != nil {
		return err
	}
	if err := WriteBotsComparison(w, cmp, s.JSON); err != nil {
		return err
	}
	if !cmp.Pass {
		return fmt.Errorf("bench: bots comparison did not pass: %v, %v", cmp.FirstComeFirstServed.Checks, cmp.Queue.Checks)
	}
	return nil
}

// WriteBotsComparison prints both reports and the comparison, as text or
// JSON.
func WriteBotsComparison(w io.Writer, cmp BotsComparison, asJSON bool) error {
	if asJSON {
		return writeIndented(w, cmp)
	}
	for _, rep := range []BotsReport{cmp.FirstComeFirstServed, cmp.Queue} {
		if err := WriteBots(w, rep, false); err != nil {
			return err
		}
	}
	f, q := cmp.FirstComeFirstServed, cmp.Queue
	fmt.Fprintf(w, "comparison, same mix, one invocation:\n")
	fmt.Fprintf(w, "  bots won %.1f%% of the units first come first served (%.2fx their share of the accounts), %.1f%% with the queue (%.2fx their share of the tickets)\n",
		100*f.BotsShareOfUnits, f.BotsAdvantage, 100*q.BotsShareOfUnits, q.Queue.BotsUnitsOverTickets)
	_, err := fmt.Fprintf(w, "  202 p99: %.1f ms without a grant, %.1f ms with one: the queue costs %+.1f ms (goal <= 5 ms: %s)\n",
		f.Admission.P99ms, q.Admission.P99ms, cmp.AdmissionP99CostMS, goal(cmp.AdmissionP99CostMS <= 5))
	return err
}
