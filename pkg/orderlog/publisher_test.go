package orderlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// gate is a MessageWriter whose calls block until released, recording what
// each call carried; answer decides a released call's error.
type gate struct {
	mu      sync.Mutex
	calls   [][]string
	release chan struct{}
	answer  func(msgs []kafka.Message) error
}

func newGate() *gate { return &gate{release: make(chan struct{}, 100)} }

func (g *gate) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	var vals []string
	for _, m := range msgs {
		vals = append(vals, string(m.Value))
	}
	g.mu.Lock()
	g.calls = append(g.calls, vals)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if g.answer != nil {
		return g.answer(msgs)
	}
	return nil
}

func (g *gate) snapshot() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]string(nil), g.calls...)
}

// waitFor polls cond every millisecond (no timing assertion: only a bound
// on a hang). It is testenv.Eventually's loop, which this package's own
// tests cannot import: testenv imports pkg/orderlog.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for hang := time.Now().Add(10 * time.Second); !cond(); <-tick.C {
		if time.Now().After(hang) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pendingOf is the number of messages waiting in the lane of key's messages.
func (p *Publisher) pendingOf(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.lanes[p.laneKey(msg(key, ""))]; l != nil {
		return len(l.pending)
	}
	return 0
}

func msg(key, val string) kafka.Message { return kafka.Message{Key: []byte(key), Value: []byte(val)} }

// publishAsync publishes one message and delivers its error.
func publishAsync(ctx context.Context, p *Publisher, key, val string) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- p.WriteMessages(ctx, msg(key, val)) }()
	return ch
}

// TestPublisherGathersWhileInFlight: the messages that arrive while a key's
// call is in flight leave together in the next call, as soon as it returns;
// another key is not held behind it.
func TestPublisherGathersWhileInFlight(t *testing.T) {
	g := newGate()
	p := NewPublisher(g, Batching{Size: 100, Bytes: 1 << 20})
	ctx := context.Background()
	first := publishAsync(ctx, p, "item", "a")
	waitFor(t, "the first call", func() bool { return len(g.snapshot()) == 1 })
	var rest []<-chan error
	for i, v := range []string{"b", "c", "d"} {
		rest = append(rest, publishAsync(ctx, p, "item", v))
		waitFor(t, v+" waiting", func() bool { return p.pendingOf("item") == i+1 })
	}
	other := publishAsync(ctx, p, "other", "x")
	waitFor(t, "the other key's call", func() bool { return len(g.snapshot()) == 2 })
	g.release <- struct{}{} // one of the two in flight
	g.release <- struct{}{}
	waitFor(t, "the gathered call", func() bool { return len(g.snapshot()) == 3 })
	g.release <- struct{}{}
	for i, ch := range append([]<-chan error{first, other}, rest...) {
		if err := <-ch; err != nil {
			t.Errorf("publish %d: %v", i, err)
		}
	}
	calls := g.snapshot()
	if fmt.Sprint(calls[2]) != "[b c d]" {
		t.Errorf("calls %v, want the third to carry [b c d]", calls)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMessages(ctx, msg("item", "late")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("publish after Close: %v", err)
	}
}

// TestPublisherPerMessageErrors: kafka-go's WriteErrors reach each caller as
// its own message's error; an error of the whole call reaches all.
func TestPublisherPerMessageErrors(t *testing.T) {
	g := newGate()
	boom := errors.New("boom")
	g.answer = func(msgs []kafka.Message) error {
		if len(msgs) == 1 {
			return nil
		}
		werrs := make(kafka.WriteErrors, len(msgs))
		for i, m := range msgs {
			if string(m.Value) == "bad" {
				werrs[i] = kafka.NotEnoughReplicas
			}
		}
		return werrs
	}
	p := NewPublisher(g, Batching{Size: 100})
	defer p.Close()
	ctx := context.Background()
	first := publishAsync(ctx, p, "k", "a")
	waitFor(t, "the first call", func() bool { return len(g.snapshot()) == 1 })
	good := publishAsync(ctx, p, "k", "good")
	waitFor(t, "good waiting", func() bool { return p.pendingOf("k") == 1 })
	bad := publishAsync(ctx, p, "k", "bad")
	waitFor(t, "bad waiting", func() bool { return p.pendingOf("k") == 2 })
	g.release <- struct{}{}
	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Errorf("first: %v", err)
	}
	if err := <-good; err != nil {
		t.Errorf("good: %v", err)
	}
	if err := <-bad; !errors.Is(err, kafka.NotEnoughReplicas) {
		t.Errorf("bad: %v, want NotEnoughReplicas", err)
	}

	g.answer = func([]kafka.Message) error { return boom }
	both := make(chan error, 1)
	go func() { both <- p.WriteMessages(ctx, msg("k", "x"), msg("k", "y")) }()
	g.release <- struct{}{}
	errs := <-both
	// The two messages went in one call (linger 0, nothing in flight):
	// both fail with the call's error.
	var werrs kafka.WriteErrors
	if !errors.As(errs, &werrs) || len(werrs) != 2 || !errors.Is(werrs[0], boom) || !errors.Is(werrs[1], boom) {
		t.Errorf("whole-call error: %v", errs)
	}
}

// TestPublisherDropsGivenUp: a caller whose context ends while its message
// waits gets ErrNotSent and its message is never written; a caller whose
// context ends after the hand-over gets the bare context error (unknown),
// and the other callers of its batch still get their acks.
func TestPublisherDropsGivenUp(t *testing.T) {
	g := newGate()
	p := NewPublisher(g, Batching{Size: 100})
	defer p.Close()
	bg := context.Background()
	hctx, hcancel := context.WithCancel(bg)
	handed := publishAsync(hctx, p, "k", "handed")
	waitFor(t, "the first call", func() bool { return len(g.snapshot()) == 1 })
	wctx, wcancel := context.WithCancel(bg)
	given := publishAsync(wctx, p, "k", "given-up")
	waitFor(t, "given-up waiting", func() bool { return p.pendingOf("k") == 1 })
	kept := publishAsync(bg, p, "k", "kept")
	waitFor(t, "kept waiting", func() bool { return p.pendingOf("k") == 2 })
	wcancel()
	if err := <-given; !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Errorf("given up while waiting: %v, want ErrNotSent and context.Canceled", err)
	}
	hcancel()
	if err := <-handed; err == nil || errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Errorf("given up after the hand-over: %v, want context.Canceled without ErrNotSent", err)
	}
	g.release <- struct{}{}
	waitFor(t, "the second call", func() bool { return len(g.snapshot()) == 2 })
	g.release <- struct{}{}
	if err := <-kept; err != nil {
		t.Errorf("kept: %v", err)
	}
	if calls := fmt.Sprint(g.snapshot()); calls != "[[handed] [kept]]" {
		t.Errorf("calls %s: the given-up message was sent", calls)
	}
}

// TestPublisherCaps: a batch holds at most Size messages; the rest wait for
// the next turn.
func TestPublisherCaps(t *testing.T) {
	g := newGate()
	p := NewPublisher(g, Batching{Size: 2})
	defer p.Close()
	bg := context.Background()
	var chs []<-chan error
	chs = append(chs, publishAsync(bg, p, "k", "0"))
	waitFor(t, "the first call", func() bool { return len(g.snapshot()) == 1 })
	for i := 1; i <= 5; i++ {
		chs = append(chs, publishAsync(bg, p, "k", fmt.Sprint(i)))
		waitFor(t, "waiting", func() bool { return p.pendingOf("k") == i })
	}
	for range 4 {
		g.release <- struct{}{}
	}
	for _, ch := range chs {
		if err := <-ch; err != nil {
			t.Error(err)
		}
	}
	if calls := fmt.Sprint(g.snapshot()); calls != "[[0] [1 2] [3 4] [5]]" {
		t.Errorf("calls %s", calls)
	}
}
