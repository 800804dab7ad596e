package main

import (
	"context"
	"sync"
	"time"
)

// LagSampler records the peak consumer-group lag on the orders topic while
// the run goes on: how far the MySQL writers fell behind the burst.
type LagSampler struct {
	brokers []string
	group   string
	topic   string
	mu      sync.Mutex
	peak    int64
	samples int
	lastErr error
	// last is the total of the latest sample; lastOK says the latest
	// attempt succeeded (a failed one hides a stale value from the timeline).
	last   int64
	lastOK bool
}

// NewLagSampler returns a sampler, or an error saying why Kafka is not
// reachable (then the report says "lag: unavailable" instead of guessing).
func NewLagSampler(ctx context.Context, brokers []string, group, topic string) (*LagSampler, error) {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := kafkaSec.Ping(pctx, brokers); err != nil {
		return nil, err
	}
	return &LagSampler{brokers: brokers, group: group, topic: topic}, nil
}

// Run samples every interval until ctx ends.
func (l *LagSampler) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		l.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (l *LagSampler) sample(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	lag, err := kafkaSec.Lag(sctx, l.brokers, l.group, l.topic)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			l.lastErr = err
			l.lastOK = false
		}
		return
	}
	var total int64
	for _, v := range lag {
		total += v
	}
	l.samples++
	l.peak = max(l.peak, total)
	l.last, l.lastOK = total, true
}

// Last returns the total lag of the latest sample, false when the latest
// attempt failed or none was made yet: the timeline's lag line.
func (l *LagSampler) Last() (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last, l.lastOK
}

// Peak returns the highest total lag seen and how many samples succeeded.
func (l *LagSampler) Peak() (int64, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peak, l.samples, l.lastErr
}

// Current returns the peak so far, for the progress line.
func (l *LagSampler) Current() int64 {
	if l == nil {
		return -1
	}
	p, _, _ := l.Peak()
	return p
}
