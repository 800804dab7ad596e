package orderlog

import (
	"context"
	"fmt"
	"testing"

	"github.com/segmentio/kafka-go"
)

// keyBalancer places a message by a fixed key → partition table.
type keyBalancer map[string]int

func (b keyBalancer) Balance(msg kafka.Message, partitions ...int) int { return b[string(msg.Key)] }

// TestPublisherOneCallPerPartition: once the Publisher knows the topic's
// partitions, a lane is a partition, not a key: kafka-go sends a
// partition's batches one at a time, so two keys of one partition with a
// call each in flight queue behind each other inside kafka-go in batches of
// one. Here the second key's message waits in the partition's open batch
// and leaves with the first key's next ones in one call, while a key of
// another partition is not held behind them.
func TestPublisherOneCallPerPartition(t *testing.T) {
	g := newGate()
	p := NewPublisher(g, Batching{Size: 100, Bytes: 1 << 20})
	p.UsePartitions(keyBalancer{"a": 0, "b": 0, "c": 1}, []int{0, 1})
	ctx := context.Background()
	first := publishAsync(ctx, p, "a", "a1")
	waitFor(t, "the first call", func() bool { return len(g.snapshot()) == 1 })
	second := publishAsync(ctx, p, "b", "b1")
	waitFor(t, "b1 waiting in partition 0's batch", func() bool { return p.pendingOf("a") == 1 })
	third := publishAsync(ctx, p, "a", "a2")
	waitFor(t, "b1 and a2 waiting in partition 0's batch", func() bool { return p.pendingOf("a") == 2 })
	other := publishAsync(ctx, p, "c", "c1")
	waitFor(t, "partition 1's call", func() bool { return len(g.snapshot()) == 2 })
	g.release <- struct{}{}
	g.release <- struct{}{}
	waitFor(t, "partition 0's gathered call", func() bool { return len(g.snapshot()) == 3 })
	g.release <- struct{}{}
	for i, ch := range []<-chan error{first, second, third, other} {
		if err := <-ch; err != nil {
			t.Errorf("publish %d: %v", i, err)
		}
	}
	if calls := g.snapshot(); fmt.Sprint(calls) != "[[a1] [c1] [b1 a2]]" {
		t.Errorf("calls %v, want [[a1] [c1] [b1 a2]]", calls)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPublisherLanesByKeyUntilPartitionsKnown: without the partitions (a
// Publisher over any MessageWriter, or before the first metadata answer)
// every key is its own lane, as before.
func TestPublisherLanesByKeyUntilPartitionsKnown(t *testing.T) {
	p := NewPublisher(newGate(), Batching{Size: 100})
	if a, b := p.laneKey(msg("a", "")), p.laneKey(msg("b", "")); a == b {
		t.Errorf("keys a and b share lane %v with no partitions known", a)
	}
	p.UsePartitions(keyBalancer{"a": 3, "b": 3}, []int{3})
	if a, b := p.laneKey(msg("a", "")), p.laneKey(msg("b", "")); a != b {
		t.Errorf("keys a and b of partition 3 in lanes %v and %v", a, b)
	}
	p.UsePartitions(nil, nil)
	if a, b := p.laneKey(msg("a", "")), p.laneKey(msg("b", "")); a == b {
		t.Errorf("keys a and b share lane %v after the partitions were forgotten", a)
	}
}
