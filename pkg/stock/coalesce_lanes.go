package stock

import (
	"context"
	"sync"
)

// lanes are a Coalescer's queues: one for a single node, one per primary
// on a Redis Cluster, each with Flushers flushers of its own. A batch then
// holds calls for one node only, so a node that stalls (SIGSTOP, a
// partition: connected, never answering) delays its own calls and nothing
// else, where a shared batch's ClusterClient pipeline waited for every node
// in it (go-redis' processPipeline: wg.Wait() over the nodes' parts) and
// each of the flushers was held by the stall in turn.
//
// A call's lane is the primary of its first key's slot as the ClusterClient
// knows it (MasterForKey: its slot map, reloaded on MOVED and every
// clusterStateReload). The map only picks the lane: the pipeline itself is
// still the ClusterClient's, which routes, follows MOVED and ASK and reloads
// as for any call, so a stale map costs at most a batch shared with another
// node's calls, never a wrong answer. Lanes are made on a node's first call
// and kept until Close: a cluster has a handful of nodes, and a promoted
// replica's lane stays warm for when it serves again.
type lanes struct {
	one    *lane // the single node's, and the Cluster's calls of no known node
	mu     sync.Mutex
	byAddr map[string]*lane
	closed bool
}

type lane struct {
	queue chan *coalescedCall
}

// newLane starts a lane's flushers.
func (c *Coalescer) newLane() *lane {
	l := &lane{queue: make(chan *coalescedCall, 4*c.cfg.MaxBatch*c.cfg.Flushers)}
	c.wg.Add(c.cfg.Flushers)
	for range c.cfg.Flushers {
		go c.flusher(l.queue)
	}
	return l
}

// laneFor returns the lane of the node serving key.
func (c *Coalescer) laneFor(ctx context.Context, key string) *lane {
	if c.cc == nil || key == "" {
		return c.one
	}
	node, err := c.cc.MasterForKey(ctx, key)
	if err != nil {
		// No slot map yet (the cluster unreachable): the call fails or
		// succeeds in the shared lane as it would alone.
		return c.one
	}
	addr := node.Options().Addr
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.byAddr[addr]; ok {
		return l
	}
	if c.closed {
		return c.one // do sees the Coalescer closed
	}
	if c.byAddr == nil {
		c.byAddr = map[string]*lane{}
	}
	l := c.newLane()
	c.byAddr[addr] = l
	return l
}
