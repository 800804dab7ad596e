package main

import (
	"context"
	"testing"
	"time"
)

// TestLongPollAgainstPipeline runs one sale polled plainly and one with
// -poll-wait against the in-process pipeline (real ingress, consumers and
// reaper): both settle everything and pass the audit, and the long polls
// cost about one status request per accepted order, because the ingress
// answers each as soon as the consumer's commit cached its status.
func TestLongPollAgainstPipeline(t *testing.T) {
	p := startPipeline(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(wait time.Duration) Report {
		s := testSettings(p.URL)
		s.Buyers, s.Units, s.Rate, s.ReapWait, s.PayFraction = 600, 150, 600, 0, 0.3
		s.PollWait = wait
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		plan, tokens := testPlan(t, s)
		rep, err := RunScenario(ctx, Workload{Settings: s, Plan: plan, Tokens: tokens},
			Scenario{Name: "flashsale", Base: p.URL, Brokers: p.Brokers, Group: p.Group, Topic: p.Topic})
		if err != nil {
			t.Fatal(err)
		}
		assertSane(t, rep, len(plan.Attempts))
		st := rep.Settle
		t.Logf("poll-wait %v: %d settled, %d status requests (%.2f per settled), settle p50 %.0f ms p99 %.0f ms",
			wait, st.Settled, st.Polls, st.PollsPerSettled, st.P50ms, st.P99ms)
		return rep
	}
	plain := run(0)
	long := run(10 * time.Second)
	if long.Settle.PollWaitMs != 10_000 || plain.Settle.PollWaitMs != 0 {
		t.Fatalf("poll wait reported %d and %d ms", plain.Settle.PollWaitMs, long.Settle.PollWaitMs)
	}
	// A long poll answers only when its request left PENDING (its 10 s
	// never run out here), so each accepted request costs exactly one: a
	// server that answered PENDING at once would cost one more per
	// -poll-interval (100 ms) until the consumer's commit.
	if st := long.Settle; st.Polls != st.Settled || st.PollErrors != 0 {
		t.Errorf("long polls: %d status requests (%d errors) for %d settled requests, want one each", st.Polls, st.PollErrors, st.Settled)
	}
}
