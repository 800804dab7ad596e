package main

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Timeline is a run's time line, one sample a second from the start of the
// scenario until the reaper wait ends: what the HTML report draws. A
// summary says how a sale ended; the timeline shows how it got there (the
// burst, the sell-out, the lag draining, the reaper giving stock back).
type Timeline struct {
	IntervalSecs float64 `json:"interval_seconds"`
	// AttackEndSecs is when the last attempt was answered, on the same clock
	// as the samples (0 when the run ended before the attack did).
	AttackEndSecs float64  `json:"attack_end_seconds"`
	Samples       []Sample `json:"samples"`
}

// Sample is what the sampler saw at one tick.
type Sample struct {
	// T is seconds since the scenario started.
	T float64 `json:"t"`
	// Answers are answers per second, by outcome row, in the window that
	// ends at T.
	Answers map[string]float64 `json:"answers_per_sec"`
	// P50ms, P90ms and P99ms are the latency percentiles of that window's
	// answers, all outcomes together; absent when nothing was answered.
	P50ms *float64 `json:"p50_ms,omitempty"`
	P90ms *float64 `json:"p90_ms,omitempty"`
	P99ms *float64 `json:"p99_ms,omitempty"`
	// Store is the item's audit read at T; absent when the read failed, so
	// the chart shows a gap instead of a made-up zero.
	Store *StoreSample `json:"store,omitempty"`
	// Unsettled is the number of accepted requests the bench was still
	// polling to a terminal status.
	Unsettled int `json:"unsettled"`
	// Lag is the consumer group's lag on the orders topic (messages);
	// absent without Kafka (baselines) or when the latest read failed.
	Lag *int64 `json:"lag,omitempty"`
}

// StoreSample is the part of the audit the timeline keeps: stock on both
// sides, reservations in flight and orders by status (units; Rejected
// counts requests, as in the audit).
type StoreSample struct {
	RedisStock int64 `json:"redis_stock"`
	DBStock    int64 `json:"db_stock"`
	Pending    int64 `json:"pending"`
	Unpaid     int64 `json:"unpaid"`
	Paid       int64 `json:"paid"`
	Cancelled  int64 `json:"cancelled"`
	Rejected   int64 `json:"rejected"`
}

// TimelineSources are what the sampler reads at each tick. Recorder is
// required; a nil Audit, Lag or Unsettled leaves that part of the sample
// empty.
type TimelineSources struct {
	Recorder *Recorder
	// Audit reads the item's audit (the admin endpoint: the same numbers
	// the final audit prints).
	Audit func(context.Context) (Audit, error)
	// Lag is the latest consumer lag; the bench's LagSampler.
	Lag interface{ Last() (int64, bool) }
	// Unsettled is the settler's count of accepted requests still polled.
	Unsettled func() int
}

// auditBudget bounds one audit read, so a stalled MySQL delays a tick, not
// the end of the run.
const auditBudget = 2 * time.Second

// Sampler takes the timeline's samples. Run it in its own goroutine for
// the length of a scenario, then read Timeline.
type Sampler struct {
	src      TimelineSources
	start    time.Time
	interval time.Duration

	mu        sync.Mutex
	prev      time.Time
	marks     map[string]int
	samples   []Sample
	attackEnd time.Time
}

// NewSampler returns a sampler whose clock starts at start.
func NewSampler(src TimelineSources, start time.Time, interval time.Duration) *Sampler {
	return &Sampler{src: src, start: start, interval: interval, prev: start, marks: map[string]int{}}
}

// Run samples every interval until ctx ends, and once more then, so the
// timeline reaches the end of the run.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.Sample(context.WithoutCancel(ctx), time.Now())
			return
		case now := <-t.C:
			s.Sample(ctx, now)
		}
	}
}

// AttackEnded marks the end of the attack on the timeline.
func (s *Sampler) AttackEnded(at time.Time) {
	s.mu.Lock()
	s.attackEnd = at
	s.mu.Unlock()
}

// Sample takes one sample at now: the answers since the previous sample as
// rates and percentiles, then the audit, lag and settler as read now.
func (s *Sampler) Sample(ctx context.Context, now time.Time) {
	s.mu.Lock()
	counts, lat := s.src.Recorder.Since(s.marks)
	window := now.Sub(s.prev).Seconds()
	s.prev = now
	s.mu.Unlock()

	smp := Sample{T: now.Sub(s.start).Seconds(), Answers: make(map[string]float64, len(Outcomes))}
	for _, o := range Outcomes {
		if window > 0 {
			smp.Answers[o] = float64(counts[o]) / window
		} else {
			smp.Answers[o] = 0
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		smp.P50ms, smp.P90ms, smp.P99ms = ptr(ms(quantile(lat, .50))), ptr(ms(quantile(lat, .90))), ptr(ms(quantile(lat, .99)))
	}
	if s.src.Audit != nil {
		actx, cancel := context.WithTimeout(ctx, auditBudget)
		if a, err := s.src.Audit(actx); err == nil {
			smp.Store = &StoreSample{RedisStock: a.RedisStock, DBStock: a.DBStock, Pending: a.Pending,
				Unpaid: a.Unpaid, Paid: a.Paid, Cancelled: a.Cancelled, Rejected: a.Rejected}
		}
		cancel()
	}
	if s.src.Lag != nil {
		if v, ok := s.src.Lag.Last(); ok {
			smp.Lag = &v
		}
	}
	if s.src.Unsettled != nil {
		smp.Unsettled = s.src.Unsettled()
	}
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
}

// Timeline returns the samples taken so far.
func (s *Sampler) Timeline() *Timeline {
	s.mu.Lock()
	defer s.mu.Unlock()
	tl := &Timeline{IntervalSecs: s.interval.Seconds(), Samples: slices.Clone(s.samples)}
	if !s.attackEnd.IsZero() {
		tl.AttackEndSecs = s.attackEnd.Sub(s.start).Seconds()
	}
	return tl
}

func ptr[T any](v T) *T { return &v }
