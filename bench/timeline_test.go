package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// fakeLag is a LagSampler stand-in: the next value and whether the latest
// read succeeded.
type fakeLag struct {
	v  atomic.Int64
	ok atomic.Bool
}

func (f *fakeLag) Last() (int64, bool) { return f.v.Load(), f.ok.Load() }

func addAnswers(rec *Recorder, outcome string, latencies ...time.Duration) {
	for _, l := range latencies {
		rec.Add(Result{Attempt: -1, Outcome: outcome, Latency: l, End: time.Now()})
	}
}

func msd(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestSamplerWindows drives the sampler tick by tick with a fake clock:
// rates and percentiles cover only the answers since the previous tick,
// over that tick's real length; a failed audit or lag read leaves a gap
// rather than a zero; the audit and the settler are read at the tick.
func TestSamplerWindows(t *testing.T) {
	rec := NewRecorder(0, nil)
	lag := &fakeLag{}
	var audits atomic.Int32
	var auditErr atomic.Bool
	unsettled := 7
	src := TimelineSources{Recorder: rec, Lag: lag, Unsettled: func() int { return unsettled },
		Audit: func(ctx context.Context) (Audit, error) {
			audits.Add(1)
			if _, ok := ctx.Deadline(); !ok {
				t.Error("audit called without a deadline")
			}
			if auditErr.Load() {
				return Audit{}, errors.New("mysql down")
			}
			return Audit{RedisStock: 10, DBStock: 12, Pending: 2, Unpaid: 3, Paid: 4, Cancelled: 1, Rejected: 5}, nil
		}}
	start := time.Unix(1000, 0)
	s := NewSampler(src, start, time.Second)
	ctx := context.Background()

	// Tick 1 (a 1 s window): 100 answers, 1..100 ms, 60 of them 202.
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, msd(i))
	}
	addAnswers(rec, OutAccepted, lat[:60]...)
	addAnswers(rec, OutSoldOut, lat[60:]...)
	lag.v.Store(42)
	lag.ok.Store(true)
	s.Sample(ctx, start.Add(time.Second))

	// Tick 2 (a 2 s window, as after a slow audit): 10 sold-out answers of
	// 500 ms; the audit and the lag read fail.
	addAnswers(rec, OutSoldOut, msd(500), msd(500), msd(500), msd(500), msd(500), msd(500), msd(500), msd(500), msd(500), msd(500))
	auditErr.Store(true)
	lag.ok.Store(false)
	unsettled = 0
	s.Sample(ctx, start.Add(3*time.Second))

	// Tick 3: nothing answered.
	auditErr.Store(false)
	s.Sample(ctx, start.Add(4*time.Second))

	s.AttackEnded(start.Add(2500 * time.Millisecond))
	tl := s.Timeline()
	if len(tl.Samples) != 3 || tl.IntervalSecs != 1 || tl.AttackEndSecs != 2.5 {
		t.Fatalf("timeline: %d samples, interval %v, attack end %v", len(tl.Samples), tl.IntervalSecs, tl.AttackEndSecs)
	}
	s1, s2, s3 := tl.Samples[0], tl.Samples[1], tl.Samples[2]

	if s1.T != 1 || s1.Answers[OutAccepted] != 60 || s1.Answers[OutSoldOut] != 40 || s1.Answers[OutLimited] != 0 {
		t.Errorf("tick 1: t %v answers %v", s1.T, s1.Answers)
	}
	if len(s1.Answers) != len(Outcomes) {
		t.Errorf("tick 1: %d outcome rates, want one per row (%d)", len(s1.Answers), len(Outcomes))
	}
	if s1.P50ms == nil || *s1.P50ms != 50 || *s1.P90ms != 90 || *s1.P99ms != 99 {
		t.Errorf("tick 1: percentiles %v %v %v, want 50 90 99", testenv.Deref(s1.P50ms), testenv.Deref(s1.P90ms), testenv.Deref(s1.P99ms))
	}
	want := StoreSample{RedisStock: 10, DBStock: 12, Pending: 2, Unpaid: 3, Paid: 4, Cancelled: 1, Rejected: 5}
	if s1.Store == nil || *s1.Store != want || s1.Lag == nil || *s1.Lag != 42 || s1.Unsettled != 7 {
		t.Errorf("tick 1: store %+v lag %v unsettled %d", s1.Store, s1.Lag, s1.Unsettled)
	}

	// Only the window's answers: 10 in 2 s is 5/s, all at 500 ms (the
	// first tick's 1..100 ms must not leak into the percentiles).
	if s2.T != 3 || s2.Answers[OutSoldOut] != 5 || s2.Answers[OutAccepted] != 0 {
		t.Errorf("tick 2: t %v answers %v", s2.T, s2.Answers)
	}
	if s2.P50ms == nil || *s2.P50ms != 500 || *s2.P99ms != 500 {
		t.Errorf("tick 2: percentiles %v %v", testenv.Deref(s2.P50ms), testenv.Deref(s2.P99ms))
	}
	if s2.Store != nil || s2.Lag != nil || s2.Unsettled != 0 {
		t.Errorf("tick 2: a failed audit and lag read must leave gaps: store %+v lag %v", s2.Store, s2.Lag)
	}

	if s3.P50ms != nil || s3.Answers[OutSoldOut] != 0 || s3.Store == nil {
		t.Errorf("tick 3: nothing answered: p50 %v answers %v store %v", testenv.Deref(s3.P50ms), s3.Answers, s3.Store)
	}
	if n := audits.Load(); n != 3 {
		t.Errorf("%d audit reads for 3 ticks", n)
	}
}

// TestSamplerRun: Run ticks on its own until ctx ends, then takes a last
// sample and returns promptly; without an audit, lag or settler the
// samples carry only the answers.
func TestSamplerRun(t *testing.T) {
	rec := NewRecorder(0, nil)
	s := NewSampler(TimelineSources{Recorder: rec}, time.Now(), 20*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // if the wait below fails
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	addAnswers(rec, OutAccepted, msd(3))
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return len(s.Timeline().Samples) >= 3 },
		"fewer than 3 samples at a 20 ms interval")
	addAnswers(rec, OutUnavail, msd(7))
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	tl := s.Timeline()
	var accepted, unavailable float64
	prev := -1.0
	for _, smp := range tl.Samples {
		if smp.T <= prev {
			t.Errorf("samples out of order: %v after %v", smp.T, prev)
		}
		prev = smp.T
		accepted += smp.Answers[OutAccepted]
		unavailable += smp.Answers[OutUnavail]
		if smp.Store != nil || smp.Lag != nil {
			t.Errorf("sample without sources has store %v lag %v", smp.Store, smp.Lag)
		}
	}
	if accepted == 0 || unavailable == 0 {
		t.Errorf("answers missing from the samples: 202 %v/s, 503 %v/s (the last one must come from the final sample)", accepted, unavailable)
	}
}

// TestRecorderSince: marks advance, each answer is in exactly one window.
func TestRecorderSince(t *testing.T) {
	rec := NewRecorder(0, nil)
	marks := map[string]int{}
	addAnswers(rec, OutAccepted, msd(1), msd(2))
	addAnswers(rec, OutSoldOut, msd(3))
	c, lat := rec.Since(marks)
	if c[OutAccepted] != 2 || c[OutSoldOut] != 1 || len(lat) != 3 {
		t.Fatalf("first window: %v %v", c, lat)
	}
	c, lat = rec.Since(marks)
	if c[OutAccepted] != 0 || len(lat) != 0 {
		t.Fatalf("empty window: %v %v", c, lat)
	}
	addAnswers(rec, OutSoldOut, msd(9))
	c, lat = rec.Since(marks)
	if c[OutSoldOut] != 1 || len(lat) != 1 || lat[0] != msd(9) {
		t.Fatalf("third window: %v %v", c, lat)
	}
}
