package orderwriter

import (
	"sync"
	"sync/atomic"

	"github.com/segmentio/kafka-go"
)

// entry is one fetched message. done is set by the round that finished it
// (written in MySQL and applied in Redis, or dead-lettered) and read by the
// committer, so it is atomic.
type entry struct {
	msg  kafka.Message
	done atomic.Bool
	b    *batchRef
}

// batchRef counts the entries of one fetched batch not yet covered by a
// committed offset; settle runs once when that count reaches zero (it frees
// the batch's place in the pipeline).
type batchRef struct {
	left   int
	settle func()
}

// tracker holds every fetched, uncommitted message of this member, across all
// batches in flight, per partition in fetch (offset) order, and yields what
// may be committed. kafka-go commits per-partition maximum offsets, so
// committing a message commits every earlier one of its partition: only a
// gap-free prefix of done messages may be committed. Batches are written
// concurrently and may finish out of order; the prefix is what keeps an
// offset from ever passing a message still being written.
type tracker struct {
	mu    sync.Mutex
	parts map[int][]*entry
	// wake is signalled (without blocking) when an entry may have become
	// committable.
	wake chan struct{}
}

func newTracker() *tracker {
	return &tracker{parts: map[int][]*entry{}, wake: make(chan struct{}, 1)}
}

// add registers a fetched batch, in fetch order: call it before any of the
// batch's messages can be marked done. settle runs when every message of the
// batch is covered by a committed offset (never for an empty batch).
func (t *tracker) add(batch []*entry, settle func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := &batchRef{left: len(batch), settle: settle}
	for _, e := range batch {
		e.b = b
		t.parts[e.msg.Partition] = append(t.parts[e.msg.Partition], e)
	}
}

// markDone marks entries finished and wakes the committer.
func (t *tracker) markDone(es ...*entry) {
	for _, e := range es {
		e.done.Store(true)
	}
	t.notify()
}

func (t *tracker) notify() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// prefix is, for one partition, how many entries at the front of its queue
// are done, and the last of them: the message to commit.
type prefix struct {
	partition int
	n         int
	last      kafka.Message
}

// committable returns, per partition with progress, the done prefix.
func (t *tracker) committable() []prefix {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []prefix
	for p, es := range t.parts {
		n := 0
		for n < len(es) && es[n].done.Load() {
			n++
		}
		if n > 0 {
			out = append(out, prefix{partition: p, n: n, last: es[n-1].msg})
		}
	}
	return out
}

// committed drops the entries a successful commit of ps covered and settles
// the batches they complete. Only the committer pops, and add only appends,
// so the first n entries are still the ones committable counted.
func (t *tracker) committed(ps []prefix) {
	var settle []func()
	t.mu.Lock()
	for _, p := range ps {
		es := t.parts[p.partition]
		for _, e := range es[:p.n] {
			e.b.left--
			if e.b.left == 0 && e.b.settle != nil {
				settle = append(settle, e.b.settle)
			}
		}
		if rest := es[p.n:]; len(rest) > 0 {
			t.parts[p.partition] = rest
		} else {
			delete(t.parts, p.partition)
		}
	}
	t.mu.Unlock()
	for _, f := range settle {
		f()
	}
}

// messages returns the messages to commit for ps.
func messages(ps []prefix) []kafka.Message {
	out := make([]kafka.Message, len(ps))
	for i, p := range ps {
		out[i] = p.last
	}
	return out
}
