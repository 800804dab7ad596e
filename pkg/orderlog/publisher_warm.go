package orderlog

import (
	"context"
	"errors"
	"slices"
	"time"
)

// PartitionRefresh is how often a warmed Publisher asks the brokers for its
// topic's partitions again, so partitions added to a running topic become
// lanes (kafka-go's own metadata lives 6 s by default; until a refresh, a
// new partition's messages share an older lane, which costs batching only).
const PartitionRefresh = 15 * time.Second

// refresher is the partition refresh loop a Publisher's Warm starts and its
// Close stops; guarded by the Publisher's mutex.
type refresher struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Warm opens the connections the first publishes will use (orderlog.Warm),
// makes p's lanes the topic's partitions, and keeps them fresh every
// PartitionRefresh until Close, even when this first try failed (the lanes
// stay keys until the brokers answer). Only a Publisher that made its
// kafka.Writer (Security.NewPublisher) can warm.
func (p *Publisher) Warm(ctx context.Context) error {
	if p.kw == nil {
		return errors.New("orderlog: warm of a Publisher over a writer it did not make")
	}
	parts, err := warm(ctx, p.kw)
	if len(parts) > 0 {
		p.UsePartitions(p.kw.Balancer, parts)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.refresh.cancel != nil {
		return err
	}
	rctx, cancel := context.WithCancel(context.Background())
	p.refresh = refresher{cancel: cancel, done: make(chan struct{})}
	go p.refreshPartitions(rctx, p.refresh.done)
	return err
}

// refreshPartitions asks for the partitions every PartitionRefresh until
// ctx ends; a failed ask keeps the lanes it had.
func (p *Publisher) refreshPartitions(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(PartitionRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		parts, err := partitionsOf(actx, p.kw)
		cancel()
		if err == nil && len(parts) > 0 {
			p.UsePartitions(p.kw.Balancer, parts)
		}
	}
}

// stopRefresh ends the refresh loop, if Warm started one, and waits for it.
func (p *Publisher) stopRefresh() {
	p.mu.Lock()
	r := p.refresh
	p.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
}

// Partitions are the partition ids p's lanes follow; nil while the lanes
// are keys.
func (p *Publisher) Partitions() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.parts)
}
