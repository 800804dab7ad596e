//go:build faults && cluster

package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// cluster drives the local stack's cluster mode (stack.sh CMD --cluster
// NODE) for the cluster fault tests: it kills, stops and pauses single
// nodes and, in cleanup, resumes what it paused and starts every node that
// is not running (up --cluster is idempotent), even when the test failed.
type cluster struct {
	stack
	t       *testing.T
	brokers []string

	mu     sync.Mutex
	paused map[string]bool
}

// newCluster checks the test's settings name the cluster (3 brokers, 3
// Redis primaries; pointed at the single-node stack the test fails) and
// registers the restore.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{stack: newStack(t), t: t, brokers: testenv.KafkaCluster(t), paused: map[string]bool{}}
	testenv.RedisCluster(t)
	t.Cleanup(c.restore)
	return c
}

func (c *cluster) node(cmd, name string) {
	c.t.Helper()
	c.run(cmd, "--cluster", name)
}

func (c *cluster) kill(name string)  { c.t.Helper(); c.node("kill", name) }
func (c *cluster) stop(name string)  { c.t.Helper(); c.node("stop", name) }
func (c *cluster) start(name string) { c.t.Helper(); c.node("start", name) }

func (c *cluster) pause(name string) {
	c.t.Helper()
	c.mu.Lock()
	c.paused[name] = true
	c.mu.Unlock()
	c.node("pause", name)
}

func (c *cluster) resume(name string) {
	c.t.Helper()
	c.node("resume", name)
	c.mu.Lock()
	delete(c.paused, name)
	c.mu.Unlock()
}

// restore resumes every node this test paused and starts any node that is
// not running, so the next test meets the whole cluster.
func (c *cluster) restore() {
	c.mu.Lock()
	paused := make([]string, 0, len(c.paused))
	for n := range c.paused {
		paused = append(paused, n)
	}
	c.mu.Unlock()
	for _, n := range paused {
		c.quiet("resume", "--cluster", n)
	}
	c.quiet("up", "--cluster")
}

// describe asks the cluster for topic's partition 0 (partitionZero).
func (c *cluster) describe(ctx context.Context, topic string) (partition, error) {
	return partitionZero(ctx, c.brokers, topic)
}

// waitInSync waits until topic's partition has a leader and every replica
// in sync, and returns how long that took.
func (c *cluster) waitInSync(topic string, timeout time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	var last string
	testenv.Eventually(c.t, timeout, 100*time.Millisecond, func() bool {
		pt, err := c.describe(context.Background(), topic)
		last = fmt.Sprintf("%+v %v", pt, err)
		return err == nil && pt.leader > 0 && len(pt.isr) == testenv.ClusterSize
	}, "%s never had a leader and all %d replicas in sync (last: %v)", topic, testenv.ClusterSize, lazy(func() string { return last }))
	return time.Since(start)
}

// leader returns the name (kafka-N) of the broker leading topic's partition.
func (c *cluster) leader(topic string) (string, partition) {
	c.t.Helper()
	pt, err := c.describe(context.Background(), topic)
	if err != nil || pt.leader < 0 {
		c.t.Fatalf("leader of %s: %+v %v", topic, pt, err)
	}
	return fmt.Sprintf("kafka-%d", pt.leader), pt
}

// others returns the brokers other than name, as kafka-N names.
func others(name string) []string {
	var out []string
	for i := 1; i <= testenv.ClusterSize; i++ {
		if n := fmt.Sprintf("kafka-%d", i); n != name {
			out = append(out, n)
		}
	}
	return out
}

// newClusterPipeline is a pipeline on the cluster: one orders partition
// (replication 3, min.insync 2 from the cluster's settings), with stock
// to spare when sellOut is false, so publishes go on during the whole
// burst and a publish stall is visible as 503s, not hidden behind 410s.
func newClusterPipeline(t *testing.T, c *cluster, units int, buckets int) *pipeline {
	t.Helper()
	cfg := defaultSettings()
	// One partition leaves a second consumer without an assignment (the
	// group check wants every consumer assigned): one writer.
	cfg.Partitions, cfg.Consumers = 1, 1
	cfg.Units, cfg.Buckets = units, buckets
	if buckets > 1 {
		// One partition per bucket's key at most; the consumer count
		// stays 1 (see above), but the keys spread.
		cfg.Partitions = 4
	}
	// A leader lost moves the group coordinator too: consumers may be
	// away longer than the usual grace, and the reaper must not void
	// requests whose messages are in the log before they are read.
	cfg.OrphanGrace = 30 * time.Second
	p := newPipeline(t, cfg)
	if d := testenv.Durability(t); d.Replication != testenv.ClusterSize {
		t.Fatalf("topic replication %d, want %d: export the cluster's settings (stack.sh env --cluster)", d.Replication, testenv.ClusterSize)
	}
	c.waitInSync(p.orders, 2*time.Minute)
	return p
}
