package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// OutcomeStats is one row of the report: an outcome's count, rate and
// latency percentiles (milliseconds).
type OutcomeStats struct {
	Outcome string  `json:"outcome"`
	Count   int     `json:"count"`
	PerSec  float64 `json:"per_sec"`
	P50ms   float64 `json:"p50_ms"`
	P90ms   float64 `json:"p90_ms"`
	P99ms   float64 `json:"p99_ms"`
	Maxms   float64 `json:"max_ms"`
}

// Report is one scenario's result.
type Report struct {
	// Scenario is "flashsale" or a baseline's name ("baseline-a ...").
	Scenario string `json:"scenario"`
	Baseline bool   `json:"baseline"`
	Target   string `json:"target"`
	ItemID   int64  `json:"item_id"`
	// Items is how many items the sale was spread over (-items); ItemID is
	// the first, and Audit sums them all.
	Items       int     `json:"items,omitempty"`
	Mode        string  `json:"mode"` // "rate" or "concurrency"
	Rate        int     `json:"rate,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	Buyers      int     `json:"buyers"`
	Units       int     `json:"units"`
	Planned     int     `json:"planned"`
	Sent        int     `json:"sent"`
	AttackSecs  float64 `json:"attack_seconds"`
	// Retries are baseline (c)'s compare-and-set retries per accepted order.
	Retries *RetryStats `json:"retries,omitempty"`
	// Phases are the rates of the order phase and the sold-out phase.
	Phases Phases `json:"phases"`
	// Outcomes has one row per outcome (202, 409 already_purchased, 410
	// sold_out, 429, 503, other); All is every answer together.
	Outcomes []OutcomeStats `json:"outcomes"`
	All      OutcomeStats   `json:"all"`
	// OtherDetail says what the "other" answers were.
	OtherDetail map[string]int `json:"other_detail,omitempty"`
	Settle      SettleStats    `json:"settle"`
	// SettleAfterAttackSecs is the time from the end of the attack until the
	// last accepted request was terminal (0: all settled during the attack).
	SettleAfterAttackSecs float64 `json:"settle_after_attack_seconds"`
	// LagPeak is the peak consumer lag (messages); nil when not measured.
	LagPeak *int64 `json:"lag_peak,omitempty"`
	LagNote string `json:"lag_note,omitempty"`
	// Publish is the ingress's Kafka publish latency during the attack
	// (flashsale with -ingress-metrics only); PublishNote says why not.
	Publish     *PublishStats `json:"publish,omitempty"`
	PublishNote string        `json:"publish_note,omitempty"`
	Audit       *Audit        `json:"audit,omitempty"`
	AuditErr    string        `json:"audit_error,omitempty"`
	// LiveAudit is how many violations the reaper's live auditor reported
	// during the run (flashsale with -reaper-metrics only; 0 on a healthy
	// sale); LiveAuditNote says why there is no figure.
	LiveAudit     *int   `json:"live_audit_reported,omitempty"`
	LiveAuditNote string `json:"live_audit_note,omitempty"`
	// Checks are the bench's own findings (unsettled requests, replays that
	// did not get their first answer, more units ordered than exist).
	Checks      []string `json:"checks"`
	Warnings    []string `json:"warnings,omitempty"`
	Pass        bool     `json:"pass"`
	Interrupted bool     `json:"interrupted,omitempty"`
	// Timeline is sampled once a second when an HTML report is asked for
	// (-html); nil otherwise.
	Timeline *Timeline `json:"timeline,omitempty"`
}

// itemsLabel names the sale's item, or its items (-items).
func (r *Report) itemsLabel() string {
	if r.Items > 1 {
		return fmt.Sprintf("%d items from %d", r.Items, r.ItemID)
	}
	return fmt.Sprintf("item %d", r.ItemID)
}

// Outcome returns the row of one outcome.
func (r *Report) Outcome(o string) OutcomeStats {
	for _, s := range r.Outcomes {
		if s.Outcome == o {
			return s
		}
	}
	return OutcomeStats{Outcome: o}
}

// Ratio compares flashsale with one baseline at equal concurrency.
type Ratio struct {
	Baseline string `json:"baseline"`
	// Throughput is flashsale's answers/s over the baseline's.
	Throughput float64 `json:"throughput"`
	// P99 is the baseline's p99 latency over flashsale's (higher = flashsale faster).
	P99 float64 `json:"p99"`
}

// Output is everything one invocation prints with -json.
type Output struct {
	Runs   []Report `json:"runs"`
	Ratios []Ratio  `json:"ratios,omitempty"`
	// SkippedBaselines are the baselines -compare was told not to run
	// (-baselines): they have no run and no ratio.
	SkippedBaselines []string `json:"skipped_baselines,omitempty"`
	// Lua is the bare admission script's rate (sold-out path) in the same
	// run; SoldOutVsLua is flashsale's sold-out answers/s over it.
	Lua          *LuaFigure `json:"lua,omitempty"`
	SoldOutVsLua float64    `json:"sold_out_vs_lua,omitempty"`
	// Floors are the HTTP and pipeline floors (-floor, -compare).
	Floors *Floors `json:"floors,omitempty"`
	Pass   bool    `json:"pass"`
}

// ParseOutput reads an Output back, strictly, so a renamed field breaks the
// test instead of the scripts that read it.
func ParseOutput(r io.Reader) (Output, error) {
	var o Output
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Output{}, fmt.Errorf("bench: parse report: %w", err)
	}
	return o, nil
}

// WriteJSON writes o as indented JSON.
func WriteJSON(w io.Writer, o Output) error {
	if err := writeIndented(w, o); err != nil {
		return fmt.Errorf("bench: write report: %w", err)
	}
	return nil
}

// writeIndented writes v as JSON indented by two spaces: every report's -json
// form (the run's, the capacity model's, the bots'), so they all read alike.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteText writes the human report.
func WriteText(w io.Writer, o Output) error {
	var b bytes.Buffer
	for i := range o.Runs {
		writeRun(&b, &o.Runs[i])
	}
	if len(o.Ratios) > 0 {
		fmt.Fprintf(&b, "== side by side (same workload, same concurrency, one after the other) ==\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "scenario\tanswers/s\t202/s\tp50 ms\tp99 ms\taudit\n")
		for _, r := range o.Runs {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.2f\t%s\n", r.Scenario, r.All.PerSec, r.Outcome(OutAccepted).PerSec, r.All.P50ms, r.All.P99ms, passFail(r.Pass))
		}
		tw.Flush()
		for _, r := range o.Ratios {
			fmt.Fprintf(&b, "flashsale / %s: throughput x%.1f, p99 %.1fx lower\n", r.Baseline, r.Throughput, r.P99)
		}
	}
	for _, name := range o.SkippedBaselines {
		fmt.Fprintf(&b, "%s: not run (-baselines), no ratio\n", name)
	}
	if o.Lua != nil {
		fmt.Fprintf(&b, "bare admission Lua (sold-out path, %d concurrent EVALSHA, no HTTP): %.0f/s; flashsale's HTTP sold-out answers/s are %.2f of it\n",
			o.Lua.Concurrency, o.Lua.PerSec, o.SoldOutVsLua)
	}
	for _, l := range floorLines(o.Floors) {
		fmt.Fprintln(&b, l)
	}
	fmt.Fprintf(&b, "RESULT: %s\n", passFail(o.Pass))
	_, err := w.Write(b.Bytes())
	return err
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func writeRun(b *bytes.Buffer, r *Report) {
	label := r.Scenario
	if r.Baseline {
		label += "  [BASELINE: comparison only, not part of flashsale]"
	}
	fmt.Fprintf(b, "\n== %s ==\n", label)
	load := fmt.Sprintf("open loop at %d req/s", r.Rate)
	if r.Mode == "concurrency" {
		load = fmt.Sprintf("closed loop, %d workers", r.Concurrency)
	}
	fmt.Fprintf(b, "target %s  %s  %d buyers for %d units  %s\n", r.Target, r.itemsLabel(), r.Buyers, r.Units, load)
	if r.Interrupted {
		fmt.Fprintf(b, "INTERRUPTED: partial report\n")
	}
	fmt.Fprintf(b, "sent %d of %d attempts in %.2fs: %.0f answers/s\n", r.Sent, r.Planned, r.AttackSecs, r.All.PerSec)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "outcome\tcount\treq/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\t\n")
	for _, s := range append(r.Outcomes, r.All) {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", s.Outcome, s.Count, s.PerSec, s.P50ms, s.P90ms, s.P99ms, s.Maxms)
	}
	tw.Flush()
	if r.Retries != nil {
		fmt.Fprintln(b, retriesLine(r.Retries))
	}
	if p := r.Phases; p.Accepted > 0 || p.SoldOut > 0 {
		fmt.Fprintf(b, "per phase: 202 %.0f/s (%d up to the last 202, %.2fs); 410 %.0f/s (%d after it, %.2fs)\n",
			p.AcceptedPerSec, p.Accepted, p.OrderSecs, p.SoldOutPerSec, p.SoldOut, p.SoldOutSecs)
	}
	if len(r.OtherDetail) > 0 {
		keys := make([]string, 0, len(r.OtherDetail))
		for k := range r.OtherDetail {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s ×%d", k, r.OtherDetail[k])
		}
		fmt.Fprintf(b, "other: %s\n", strings.Join(parts, ", "))
	}
	s := r.Settle
	fmt.Fprintf(b, "settled %d of %d accepted requests (%d still pending); accept→terminal p50 %.0f ms p99 %.0f ms max %.0f ms; all settled %.2fs after the attack\n",
		s.Settled, s.Tracked, s.Unsettled, s.P50ms, s.P99ms, s.Maxms, r.SettleAfterAttackSecs)
	fmt.Fprintf(b, "statuses %v; paid %d, pay refused %d, pay errors %d, poll errors %d\n", s.Statuses, s.Paid, s.PayRefused, s.PayErrors, s.PollErrors)
	pollMode := "plain polling"
	if s.PollWaitMs > 0 {
		pollMode = fmt.Sprintf("long polls ?wait=%dms", s.PollWaitMs)
	}
	fmt.Fprintf(b, "status requests %d (%s), %.2f per settled request", s.Polls, pollMode, s.PollsPerSettled)
	if s.SettledByAnswer > 0 {
		fmt.Fprintf(b, "; %d settled by their 202 (orders sent with ?wait=), never polled", s.SettledByAnswer)
	}
	fmt.Fprintln(b)
	switch {
	case r.Publish != nil:
		fmt.Fprintf(b, "%s\n", publishLine(r.Publish))
	case r.PublishNote != "":
		fmt.Fprintf(b, "kafka publish: %s\n", r.PublishNote)
	}
	switch {
	case r.LagPeak != nil:
		fmt.Fprintf(b, "consumer lag peak: %d messages\n", *r.LagPeak)
	case r.LagNote != "":
		fmt.Fprintf(b, "consumer lag: %s\n", r.LagNote)
	}
	if a := r.Audit; a != nil {
		fmt.Fprintf(b, "audit: total %d, mysql stock %d, redis stock %d, pending %d, unpaid %d, paid %d, cancelled %d, rejected %d: %s\n",
			a.Total, a.DBStock, a.RedisStock, a.Pending, a.Unpaid, a.Paid, a.Cancelled, a.Rejected, passFail(a.OK))
		for _, v := range a.Violations {
			fmt.Fprintf(b, "  violation: %s\n", v)
		}
	} else {
		fmt.Fprintf(b, "audit: unavailable: %s\n", r.AuditErr)
	}
	switch {
	case r.LiveAudit != nil:
		fmt.Fprintf(b, "live audit (the reaper's auditor during the run): %d violations reported\n", *r.LiveAudit)
	case r.LiveAuditNote != "":
		fmt.Fprintf(b, "live audit: %s\n", r.LiveAuditNote)
	}
	for _, c := range r.Checks {
		fmt.Fprintf(b, "  bench check failed: %s\n", c)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "  warning: %s\n", w)
	}
	fmt.Fprintf(b, "%s: %s\n", r.Scenario, passFail(r.Pass))
}
