package orderlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"
)

// ErrNotSent wraps the context error of a publish whose context ended while
// its message was still waiting in the Publisher: it was never handed to
// kafka-go, so it is not written, now or later. A publish whose context ended
// after the hand-over returns the bare context error: its message may or may
// not be written.
var ErrNotSent = errors.New("orderlog: publish not sent")

// MessageWriter is the part of *kafka.Writer a Publisher drives.
type MessageWriter interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Publisher coalesces the synchronous publishes of concurrent requests per
// message key, like the Java producer's open batch: a key has at most one
// WriteMessages call in flight, and the messages that arrive meanwhile wait
// in the key's open batch and leave together, in one call, as soon as the
// previous call returns. Each caller still gets its own message's result
// (kafka-go's WriteErrors are split per message).
//
// Why: kafka-go's Writer closes a partition's batch when its BatchTimeout
// ends, even while the partition's previous batch is in flight, and sends a
// partition's batches one at a time. With a 250 ms produce round trip a hot
// item (one key, one partition) moved about one 10 ms batch per round trip,
// 4 a second against 30 orders arriving: the queue grew until every publish
// timed out (faults/netfaults_test.go, SlowLinks/kafka). Here the open batch
// keeps filling for as long as the previous one is in flight, so a batch
// carries a whole round trip's messages.
//
// A lane is a partition once the Publisher knows the topic's partitions
// (UsePartitions; Warm learns them and keeps them fresh), and a key until
// then. kafka-go sends a partition's batches one at a time, so with a lane
// per key the 83 keys a 1,000-item sale puts on each of 12 partitions each
// had a call in flight that kafka-go queued as a batch of about one
// message: BenchmarkManyKeyPublish (64 publishers, 12 partitions, medians
// of 3), 1,000 keys took 247 µs per publish (p99 31 ms) with lanes by key
// and take 172 µs (p99 19 ms) with lanes by partition; one hot key, in the
// same runs, 191 and 181 µs. A lane by partition gathers all of that
// partition's keys into one call, and a partition whose leader is slow
// holds only its own keys. The partition is the one the writer's balancer
// picks (the same Balancer, the same sorted partition ids), so the lane and
// kafka-go agree; should they not (partitions added since the last
// refresh), the cost is batching, never a message: each message still gets
// its own result.
//
// Linger (Batching.Timeout) is how long a batch waits for company when
// nothing is in flight; Size and Bytes cap a batch (a fuller open batch
// waits for the next turn). A message whose caller's context ends before it
// is handed over is dropped: nobody would act on its ack (the caller aborts
// the order), and it no longer reaches the log after the fault heals.
type Publisher struct {
	w      MessageWriter
	kw     *kafka.Writer // w, when the Publisher made it
	size   int
	bytes  int64
	linger time.Duration

	mu       sync.Mutex
	lanes    map[laneID]*lane
	balancer kafka.Balancer // with parts: lanes by partition
	parts    []int
	closed   bool
	live     sync.WaitGroup // one per lane
	refresh  refresher      // Warm's partition refresh
}

// laneID names a lane: a partition (key empty) once the partitions are
// known, else a key (partition -1).
type laneID struct {
	partition int
	key       string
}

// lane is one key's open batch and its call in flight.
type lane struct {
	id       laneID
	pending  []*publish
	inflight bool
	timer    *time.Timer
	retired  bool // removed from lanes; a late timer finds it so
}

// publish is one caller's message; state and done are guarded by the
// Publisher's mutex, done is written once (buffered).
type publish struct {
	ctx   context.Context
	lane  *lane
	msg   kafka.Message
	at    time.Time
	bytes int64
	state publishState
	done  chan error
}

type publishState int

const (
	waiting publishState = iota
	handed
	dropped
)

// handOffTimeout is the BatchTimeout of the kafka.Writer under a Publisher:
// the Publisher has already gathered the batch, so kafka-go should send
// what one call gives it without waiting for more.
const handOffTimeout = time.Microsecond

// NewPublisher returns a Publisher over w with b's linger and caps.
func NewPublisher(w MessageWriter, b Batching) *Publisher {
	return &Publisher{w: w, size: max(1, b.Size), bytes: b.Bytes, linger: b.Timeout, lanes: map[laneID]*lane{}}
}

// NewPublisher is the ingress's publish path: a durable writer
// (NewBatchedWriter's settings, b's caps and codec, no wait of its own)
// under a Publisher that lingers b.Timeout.
func (s *Security) NewPublisher(brokers []string, topic string, writeTimeout time.Duration, b Batching) *Publisher {
	w := s.NewBatchedWriter(brokers, topic, writeTimeout, b)
	w.BatchTimeout = handOffTimeout
	p := NewPublisher(w, b)
	p.kw = w
	return p
}

// Writer is the kafka.Writer under p when p made it (for Warm), else nil.
func (p *Publisher) Writer() *kafka.Writer { return p.kw }

// WriteMessages publishes msgs and waits for their acks or ctx. Each message
// carries the W3C trace context of ctx's span (InjectTrace: the admission's
// publish span), so the consumer's batch links to the order's trace; with no
// span in ctx (tracing off) a message is written as it was given. It returns
// nil when all were acknowledged; for one message its error; for several,
// kafka.WriteErrors when any failed. An error wrapping ErrNotSent (and the
// context's error) means that message was never handed to kafka-go; any
// other error leaves its message's fate unknown.
func (p *Publisher) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if trace.SpanContextFromContext(ctx).IsValid() {
		msgs = slices.Clone(msgs) // the caller's messages and header arrays stay as they were
		for i := range msgs {
			msgs[i].Headers = slices.Clip(msgs[i].Headers)
			InjectTrace(ctx, &msgs[i])
		}
	}
	pubs := make([]*publish, len(msgs))
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return io.ErrClosedPipe
	}
	now := time.Now()
	for i, m := range msgs {
		pubs[i] = &publish{ctx: ctx, msg: m, at: now, bytes: messageBytes(m), done: make(chan error, 1)}
		p.enqueue(pubs[i])
	}
	for _, pb := range pubs { // once all are in: one call's messages leave together
		p.kick(pb.lane)
	}
	p.mu.Unlock()
	errs := make(kafka.WriteErrors, len(msgs))
	failed := false
	for i, pb := range pubs {
		errs[i] = p.wait(pb)
		failed = failed || errs[i] != nil
	}
	switch {
	case len(msgs) == 1:
		return errs[0]
	case failed:
		return errs
	}
	return nil
}

// wait returns pb's result, or, once its context ends, withdraws it if it
// is still waiting.
func (p *Publisher) wait(pb *publish) error {
	select {
	case err := <-pb.done:
		return err
	case <-pb.ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch pb.state {
	case waiting:
		p.withdraw(pb)
		return fmt.Errorf("%w: %w", ErrNotSent, pb.ctx.Err())
	case dropped:
		return <-pb.done
	}
	select {
	case err := <-pb.done: // answered as the context ended: the answer holds
		return err
	default:
		return pb.ctx.Err()
	}
}

// messageBytes approximates a message's share of a batch's bytes.
func messageBytes(m kafka.Message) int64 {
	n := len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// UsePartitions makes the lanes partitions: b (the balancer of the
// kafka.Writer under p) picks a message's partition among partitions (the
// topic's partition ids). A nil b or no partitions makes them keys again.
// Lanes already open keep their messages; new messages take the new lanes.
func (p *Publisher) UsePartitions(b kafka.Balancer, partitions []int) {
	parts := slices.Sorted(slices.Values(partitions)) // kafka-go balances over sorted ids
	p.mu.Lock()
	defer p.mu.Unlock()
	if b == nil || len(parts) == 0 {
		p.balancer, p.parts = nil, nil
		return
	}
	p.balancer, p.parts = b, parts
}

// laneKey is m's lane: its partition when the partitions are known, else
// its key. p.mu is held (or no UsePartitions runs at the same time).
func (p *Publisher) laneKey(m kafka.Message) laneID {
	if p.balancer == nil {
		return laneID{partition: -1, key: string(m.Key)}
	}
	return laneID{partition: p.balancer.Balance(m, p.parts...)}
}

// enqueue adds pb to its lane's open batch; the caller kicks the lane.
// p.mu is held.
func (p *Publisher) enqueue(pb *publish) {
	k := p.laneKey(pb.msg)
	l := p.lanes[k]
	if l == nil {
		l = &lane{id: k}
		p.lanes[k] = l
		p.live.Add(1)
	}
	pb.lane = l
	l.pending = append(l.pending, pb)
}

// withdraw removes a waiting pb from its lane. p.mu is held.
func (p *Publisher) withdraw(pb *publish) {
	l := pb.lane
	for i, q := range l.pending {
		if q == pb {
			l.pending = append(l.pending[:i], l.pending[i+1:]...)
			break
		}
	}
	pb.state = dropped
	p.kick(l)
}

// kick sends l's open batch if nothing is in flight and it is ready (full,
// or its oldest message has lingered long enough), arms the linger timer if
// it is not ready yet, and retires an idle empty lane. p.mu is held.
func (p *Publisher) kick(l *lane) {
	if l.inflight || l.retired {
		return
	}
	if len(l.pending) == 0 {
		if l.timer != nil {
			l.timer.Stop()
		}
		l.retired = true
		delete(p.lanes, l.id)
		p.live.Done()
		return
	}
	var n int
	var bytes int64
	for _, pb := range l.pending {
		n, bytes = n+1, bytes+pb.bytes
	}
	if wait := time.Until(l.pending[0].at.Add(p.linger)); wait > 0 && n < p.size && (p.bytes <= 0 || bytes < p.bytes) {
		if l.timer == nil {
			l.timer = time.AfterFunc(wait, func() { p.mu.Lock(); p.kick(l); p.mu.Unlock() })
		} else {
			l.timer.Reset(wait)
		}
		return
	}
	p.send(l)
}

// send hands the head of l's open batch (up to the caps) to kafka-go in one
// call, skipping messages whose callers have given up. p.mu is held.
func (p *Publisher) send(l *lane) {
	var batch []*publish
	var bytes int64
	var latest time.Time
	forever := false
	rest := l.pending[:0]
	for _, pb := range l.pending {
		switch {
		case pb.ctx.Err() != nil:
			pb.state = dropped
			pb.done <- fmt.Errorf("%w: %w", ErrNotSent, pb.ctx.Err())
		case len(batch) < p.size && (len(batch) == 0 || p.bytes <= 0 || bytes+pb.bytes <= p.bytes):
			pb.state = handed
			batch, bytes = append(batch, pb), bytes+pb.bytes
			if dl, ok := pb.ctx.Deadline(); !ok {
				forever = true
			} else if dl.After(latest) {
				latest = dl
			}
		default:
			rest = append(rest, pb)
		}
	}
	clear(l.pending[len(rest):])
	l.pending = rest
	if len(batch) == 0 {
		p.kick(l)
		return
	}
	l.inflight = true
	// The call lasts as long as its most patient caller: kafka-go keeps
	// sending a batch whose call returned anyway, and one caller giving up
	// must not fail the others.
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if !forever {
		ctx, cancel = context.WithDeadline(ctx, latest)
	}
	go func() {
		defer cancel()
		msgs := make([]kafka.Message, len(batch))
		for i, pb := range batch {
			msgs[i] = pb.msg
		}
		err := p.w.WriteMessages(ctx, msgs...)
		var werrs kafka.WriteErrors
		perMessage := errors.As(err, &werrs) && len(werrs) == len(batch)
		for i, pb := range batch {
			if perMessage {
				pb.done <- werrs[i]
			} else {
				pb.done <- err
			}
		}
		p.mu.Lock()
		l.inflight = false
		p.kick(l)
		p.mu.Unlock()
	}()
}

// Close refuses new publishes, waits until every key's open batch has been
// sent or withdrawn and every call has returned, and closes the kafka.Writer
// p made.
func (p *Publisher) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.stopRefresh()
	p.live.Wait()
	if p.kw != nil {
		return p.kw.Close()
	}
	return nil
}
