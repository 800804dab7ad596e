package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestOpenLoopAgainstPipeline runs the default mode (vegeta open loop) of a
// short flash sale against the whole pipeline, with a payment window short
// enough that the reaper cancels the unpaid orders, and asserts what the
// demo promises: every accepted request settles, the audit passes, the
// report round-trips through -json.
func TestOpenLoopAgainstPipeline(t *testing.T) {
	p := startPipeline(t, 2*time.Second)
	s := testSettings(p.URL)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	plan, tokens := testPlan(t, s)
	rep, err := RunScenario(ctx, Workload{Settings: s, Plan: plan, Tokens: tokens, Timeline: true},
		Scenario{Name: "flashsale", Base: p.URL, Brokers: p.Brokers, Group: p.Group, Topic: p.Topic, ReapWait: s.ReapWait})
	if err != nil {
		t.Fatal(err)
	}
	out := roundTrip(t, Output{Runs: []Report{rep}, Pass: rep.Pass})
	assertTimeline(t, out.Runs[0])
	r := out.Runs[0]
	assertSane(t, r, len(plan.Attempts))
	if r.Outcome(OutAccepted).Count < s.Units {
		t.Errorf("only %d accepted for %d units and %d buyers", r.Outcome(OutAccepted).Count, s.Units, s.Buyers)
	}
	if r.LagPeak == nil {
		t.Errorf("lag not sampled: %s", r.LagNote)
	}
	if r.Audit.Cancelled == 0 || r.Settle.Paid == 0 {
		t.Errorf("expected the reaper to cancel unpaid orders and some buyers to pay: audit %+v, paid %d", *r.Audit, r.Settle.Paid)
	}
	// The run ended its sale, so the live auditor stops watching it.
	var ended bool
	if err := p.DB.QueryRowContext(ctx, "SELECT ends_at <= NOW(3) FROM items WHERE id = ?", r.ItemID).Scan(&ended); err != nil || !ended {
		t.Errorf("the sale of item %d did not end with its run (ended %v, %v)", r.ItemID, ended, err)
	}
}

// assertTimeline checks a real run's timeline against its own summary, then
// renders its HTML report in headless Chromium: every chart, every series
// drew (a real flashsale run has answers, latencies, audits and lag).
func assertTimeline(t *testing.T, r Report) {
	t.Helper()
	tl := r.Timeline
	if tl == nil || len(tl.Samples) < 2 {
		t.Fatalf("timeline: %+v", tl)
	}
	if tl.AttackEndSecs <= 0 || tl.AttackEndSecs > tl.Samples[len(tl.Samples)-1].T {
		t.Errorf("attack end %.1fs outside the timeline (last sample %.1fs)", tl.AttackEndSecs, tl.Samples[len(tl.Samples)-1].T)
	}
	var answers float64
	audited, lagged := 0, 0
	for i, smp := range tl.Samples {
		if i > 0 {
			answers += smp.Answers[OutAccepted] * (smp.T - tl.Samples[i-1].T)
		} else {
			answers += smp.Answers[OutAccepted] * smp.T
		}
		if smp.Store != nil {
			audited++
		}
		if smp.Lag != nil {
			lagged++
		}
	}
	// The per-second rates integrate back to the recorder's count of 202s.
	if got, want := int(answers+0.5), r.Outcome(OutAccepted).Count; got != want {
		t.Errorf("timeline's 202 rates add up to %d answers, the report counted %d", got, want)
	}
	if audited == 0 || lagged == 0 {
		t.Errorf("of %d samples, %d have an audit and %d a lag", len(tl.Samples), audited, lagged)
	}
	last := tl.Samples[len(tl.Samples)-1].Store
	if a := r.Audit; last != nil && a != nil && (last.Cancelled > a.Cancelled || last.Paid > a.Paid) {
		t.Errorf("last sample %+v is ahead of the final audit %+v", *last, *a)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := WriteHTMLFile(file, Output{Runs: []Report{r}, Pass: r.Pass}); err != nil {
		t.Fatal(err)
	}
	assertDrew(t, dumpDOM(t, file), len(chartSpecs()), nil)
}

// TestCompare runs -compare end to end at a small N: both baselines on
// their loopback servers, then flashsale, all three audited, ratios present.
func TestCompare(t *testing.T) {
	p := startPipeline(t, time.Minute)
	s := testSettings(p.URL)
	s.Compare, s.Concurrency, s.ReapWait = true, 8, 0
	out, plan := runCompareTest(t, p, s)
	if len(out.Runs) != 3 || len(out.Ratios) != 2 {
		t.Fatalf("want 3 runs and 2 ratios, got %d and %d", len(out.Runs), len(out.Ratios))
	}
	for i, want := range []string{BaselineA, BaselineB, "flashsale"} {
		r := out.Runs[i]
		if r.Scenario != want || r.Baseline != (i < 2) || r.Mode != "concurrency" || r.Concurrency != 8 {
			t.Errorf("run %d: %s baseline=%v mode=%s concurrency=%d", i, r.Scenario, r.Baseline, r.Mode, r.Concurrency)
		}
		assertSane(t, r, len(plan.Attempts))
		if r.Settle.OrderedUnits != s.Units {
			t.Errorf("%s: buyers saw %d units ordered, want all %d sold", r.Scenario, r.Settle.OrderedUnits, s.Units)
		}
	}
	if out.Lua == nil || out.Lua.PerSec <= 0 || out.SoldOutVsLua <= 0 {
		t.Errorf("bare lua figure missing: %+v", out.Lua)
	}
	for _, r := range out.Ratios {
		if r.Throughput <= 0 {
			t.Errorf("ratio %+v", r)
		}
	}
	if !out.Pass {
		t.Errorf("compare did not pass")
	}
}

// assertSane checks one report: every attempt answered and counted once,
// nothing but the expected outcomes, every 202 settled, audit and checks pass.
func assertSane(t *testing.T, r Report, planned int) {
	t.Helper()
	sum := 0
	for _, o := range r.Outcomes {
		sum += o.Count
	}
	if r.Sent != planned || sum != planned || r.All.Count != planned {
		t.Errorf("%s: sent %d, rows sum %d, all %d; planned %d", r.Scenario, r.Sent, sum, r.All.Count, planned)
	}
	if n := r.Outcome(OutOther).Count; n > 0 {
		t.Errorf("%s: %d other answers: %v", r.Scenario, n, r.OtherDetail)
	}
	if r.Settle.Unsettled != 0 || r.Settle.Settled == 0 {
		t.Errorf("%s: settle %+v", r.Scenario, r.Settle)
	}
	if r.Audit == nil || !r.Audit.OK {
		t.Errorf("%s: audit %+v err %q", r.Scenario, r.Audit, r.AuditErr)
	}
	if !r.Pass || len(r.Checks) != 0 {
		t.Errorf("%s: pass=%v checks %v", r.Scenario, r.Pass, r.Checks)
	}
}

// runCompareTest runs -compare (RunCompare) against p with s at the
// tests' small N, drops the baselines' database at the end, and returns the
// output as read back from its JSON, and the plan it ran.
func runCompareTest(t *testing.T, p pipeline, s Settings) (Output, Plan) {
	t.Helper()
	t.Cleanup(func() { dropDB(t, s.BaselineDB) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	plan, tokens := testPlan(t, s)
	out, err := RunCompare(ctx, p.Common, Workload{Settings: s, Plan: plan, Tokens: tokens, Concurrency: s.Concurrency, LagGroup: p.Group, LagTopic: p.Topic})
	if err != nil {
		t.Fatal(err)
	}
	return roundTrip(t, out), plan
}

// roundTrip prints the report as JSON and as text and reads the JSON back.
func roundTrip(t *testing.T, o Output) Output {
	t.Helper()
	var js, txt bytes.Buffer
	if err := WriteJSON(&js, o); err != nil {
		t.Fatal(err)
	}
	got, err := ParseOutput(&js)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&txt, got); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", txt.String())
	if want := "RESULT: " + passFail(o.Pass); !strings.Contains(txt.String(), want) {
		t.Errorf("text report lacks %q", want)
	}
	return got
}

func dropDB(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := testenv.Common(t)
	db, err := store.Open(ctx, c.DSN(), 1, 5*time.Second)
	if err != nil {
		t.Logf("drop %s: %v", name, err)
		return
	}
	defer db.Close()
	_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
}

// testPlan is s's plan of attempts and its buyers' tokens, good for an hour.
func testPlan(t *testing.T, s Settings) (Plan, Tokens) {
	t.Helper()
	tokens, err := MintTokens(s.JWTSecret, s.Buyers, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return NewPlan(s.Buyers, s.DupFraction, s.ReplayFraction, s.PayFraction, s.Seed), tokens
}
