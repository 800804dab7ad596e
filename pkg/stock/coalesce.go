package stock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Coalescer sends the hot path's Redis calls that arrive together in one
// pipeline: one write and one read for a whole batch instead of a pair of
// system calls per request, which is what the ingress' CPU profile spent
// most of its time on under a burst (issue 12: 28% in write/read).
//
// It adds no wait at low load: a call that finds an idle flusher is sent at
// once, alone. Calls queue only while every flusher has a round trip in
// flight, and the next free flusher takes all of them (up to MaxBatch), so
// batches grow exactly as fast as the load does.
//
// Each call keeps its own context and its own reply:
//   - a call whose context ends while it is still queued is taken out and
//     fails with ErrNotSent: it certainly never reached Redis;
//   - a call whose context ends after its batch was written returns the
//     context's error, an ambiguous outcome like a read timeout (the scripts
//     carry their caller's deadline and refuse to act after it, see
//     admit.lua);
//   - one command's error reply (NOSCRIPT, a script error) fails that
//     command only; a connection lost under a batch fails exactly the calls
//     on that connection, as it would fail a single call.
//
// After a NOSCRIPT (Redis restarted, failover) the calls that got it are
// sent once more, with EVAL, in one further pipeline.
//
// On a Redis Cluster each primary has a lane of its own (a queue and
// Flushers flushers, see coalesce_lanes.go): a pipeline of a ClusterClient
// returns only once every node in it answered, so one stalled primary in a
// shared batch held the calls of every shard, and every flusher with them.
type Coalescer struct {
	rdb  redis.UniversalClient
	cc   *redis.ClusterClient // nil: one node, one lane
	cfg  CoalesceConfig
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	lanes
}

// CoalesceConfig bounds a Coalescer.
type CoalesceConfig struct {
	// MaxBatch is the most calls sent in one pipeline.
	MaxBatch int
	// Window is how long a flusher that has fewer than MaxBatch calls waits
	// for more before it sends them. 0 (the default) never waits: batching
	// then comes only from calls that queued behind busy flushers.
	Window time.Duration
	// Flushers is how many pipelines may be in flight at once.
	Flushers int
	// Observe, when set, is told each sent batch's size (a metric).
	Observe func(calls int)
}

// ErrNotSent is the error of a call that left the queue before it was
// written to Redis: its context ended there, or the Coalescer closed.
var ErrNotSent = errors.New("stock: call never sent")

// Call states: queued → taken by a flusher, or queued → abandoned by its
// caller. Exactly one side wins the swap, so a call is either sent or
// reported never sent, never both.
const (
	callQueued int32 = iota
	callTaken
	callAbandoned
)

type coalescedCall struct {
	cmd redis.Cmder
	// key picks the lane: the node serving its slot.
	key string
	// script, keys and args are set for an EVALSHA, so a NOSCRIPT reply can
	// be sent again as EVAL of the same script.
	script   *redis.Script
	keys     []string
	args     []any
	deadline time.Time
	state    atomic.Int32
	done     chan struct{}
}

// NewCoalescer starts cfg.Flushers flushers on rdb (on a Cluster, that
// many more for each primary once it has calls); Close stops them.
func NewCoalescer(rdb redis.UniversalClient, cfg CoalesceConfig) *Coalescer {
	cfg.MaxBatch = max(cfg.MaxBatch, 1)
	cfg.Flushers = max(cfg.Flushers, 1)
	c := &Coalescer{rdb: rdb, cfg: cfg, done: make(chan struct{})}
	c.cc, _ = rdb.(*redis.ClusterClient)
	c.one = c.newLane()
	return c
}

// Close stops the flushers after their batches in flight. Calls still
// queued fail with ErrNotSent: their callers, waiting in do, see the
// Coalescer closed and take them out of the queue.
func (c *Coalescer) Close() {
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		close(c.done)
	})
	c.wg.Wait()
}

// Do sends cmd in the next batch and waits for its reply or ctx. On an
// error other than the command's own, cmd is not to be read afterwards: a
// batch already on the wire may still fill it in.
func (c *Coalescer) Do(ctx context.Context, cmd redis.Cmder) error {
	var key string
	if args := cmd.Args(); len(args) > 1 {
		key = fmt.Sprint(args[1]) // the first key of the commands sent here
	}
	_, err := c.do(ctx, &coalescedCall{cmd: cmd, key: key})
	return err
}

// do is Do, also saying whether cmd holds its reply.
func (c *Coalescer) do(ctx context.Context, cl *coalescedCall) (replied bool, err error) {
	cmd := cl.cmd
	cl.done = make(chan struct{})
	cl.deadline, _ = ctx.Deadline()
	select {
	case <-c.done:
		return false, fmt.Errorf("%w: %w", ErrNotSent, redis.ErrClosed)
	default:
	}
	queue := c.laneFor(ctx, cl.key).queue
	select {
	case queue <- cl:
	case <-ctx.Done():
		return false, fmt.Errorf("%w: %w", ErrNotSent, ctx.Err())
	case <-c.done:
		return false, fmt.Errorf("%w: %w", ErrNotSent, redis.ErrClosed)
	}
	select {
	case <-cl.done:
		return true, cmd.Err()
	case <-c.done:
		// Closing: a flusher that already took the call finishes it.
		if cl.state.CompareAndSwap(callQueued, callAbandoned) {
			return false, fmt.Errorf("%w: %w", ErrNotSent, redis.ErrClosed)
		}
	case <-ctx.Done():
		if cl.state.CompareAndSwap(callQueued, callAbandoned) {
			return false, fmt.Errorf("%w: %w", ErrNotSent, ctx.Err())
		}
		return false, fmt.Errorf("stock: reply not read before the deadline: %w", ctx.Err())
	}
	select {
	case <-cl.done:
		return true, cmd.Err()
	case <-ctx.Done():
		return false, fmt.Errorf("stock: reply not read before the deadline: %w", ctx.Err())
	}
}

// EvalSha runs script through the batch, attempted again as sendRetried
// says (each attempt in a batch of its own). The command it returns is safe
// to read: when the caller's context ended before the reply, it is a fresh
// one holding that error.
func (c *Coalescer) EvalSha(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	var key string
	if len(keys) > 0 {
		key = keys[0]
	}
	cmdArgs := scriptArgs("evalsha", script.Hash(), keys, args)
	var cmd *redis.Cmd
	err := sendRetried(ctx, func() error {
		cmd = redis.NewCmd(ctx, cmdArgs...)
		if ok, err := c.do(ctx, &coalescedCall{cmd: onceCmd{cmd}, key: key, script: script, keys: keys, args: args}); !ok {
			cmd = redis.NewCmd(ctx, cmdArgs...)
			cmd.SetErr(err)
		}
		return cmd.Err()
	})
	if err != cmd.Err() {
		cmd.SetErr(err)
	}
	return cmd
}

func (c *Coalescer) flusher(queue chan *coalescedCall) {
	defer c.wg.Done()
	batch := make([]*coalescedCall, 0, c.cfg.MaxBatch)
	for {
		batch = batch[:0]
		select {
		case <-c.done:
			return
		case cl := <-queue:
			batch = append(batch, cl)
		}
		batch = c.fill(queue, batch)
		live := batch[:0]
		for _, cl := range batch {
			if cl.state.CompareAndSwap(callQueued, callTaken) {
				live = append(live, cl)
			}
		}
		if len(live) > 0 {
			c.send(live)
		}
	}
}

// fill adds the calls already queued, and with a Window those arriving
// within it, up to MaxBatch.
func (c *Coalescer) fill(queue chan *coalescedCall, batch []*coalescedCall) []*coalescedCall {
	var linger <-chan time.Time
	if c.cfg.Window > 0 {
		t := time.NewTimer(c.cfg.Window)
		defer t.Stop()
		linger = t.C
	}
	for len(batch) < c.cfg.MaxBatch {
		select {
		case cl := <-queue:
			batch = append(batch, cl)
			continue
		default:
		}
		if linger == nil {
			return batch
		}
		select {
		case cl := <-queue:
			batch = append(batch, cl)
		case <-linger:
			return batch
		case <-c.done:
			return batch
		}
	}
	return batch
}

// send writes the batch as one pipeline, bounded by its latest caller
// deadline (every earlier caller stops waiting on its own), then resends
// the NOSCRIPT ones with EVAL, and wakes every caller.
func (c *Coalescer) send(batch []*coalescedCall) {
	if c.cfg.Observe != nil {
		c.cfg.Observe(len(batch))
	}
	ctx, cancel := c.batchContext(batch)
	defer cancel()
	c.exec(ctx, batch)
	var again []*coalescedCall
	for _, cl := range batch {
		if cl.script != nil && isNoScript(cl.cmd.Err()) {
			again = append(again, cl)
		}
	}
	if len(again) > 0 {
		p := c.rdb.Pipeline()
		sc := onceScripter{Scripter: p, process: p.Process}
		evals := make([]*redis.Cmd, len(again))
		for i, cl := range again {
			evals[i] = cl.script.Eval(ctx, sc, cl.keys, cl.args...)
		}
		_, _ = p.Exec(ctx)
		for i, cl := range again {
			cmd := cl.cmd.(onceCmd)
			cmd.SetVal(evals[i].Val())
			cmd.SetErr(evals[i].Err())
		}
	}
	for _, cl := range batch {
		close(cl.done)
	}
}

func (c *Coalescer) exec(ctx context.Context, batch []*coalescedCall) {
	p := c.rdb.Pipeline()
	for _, cl := range batch {
		_ = p.Process(ctx, cl.cmd)
	}
	_, _ = p.Exec(ctx) // each command holds its own error
}

func (c *Coalescer) batchContext(batch []*coalescedCall) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, cl := range batch {
		if cl.deadline.IsZero() {
			// A caller without a deadline: the client's read and write
			// timeouts bound the batch.
			return context.WithCancel(context.Background())
		}
		if cl.deadline.After(latest) {
			latest = cl.deadline
		}
	}
	return context.WithDeadline(context.Background(), latest)
}
