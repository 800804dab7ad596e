//go:build faults

package faults

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/segmentio/kafka-go"
)

// partition is one partition's metadata as the brokers report it.
type partition struct {
	leader int   // node id, -1 while there is none
	isr    []int // in-sync replicas, sorted
}

// partitionZero asks each broker in brokers in turn, on a connection of its
// own, for topic's partition 0 (the tests that look at leaders use one
// partition, so that broker leads all of the item's messages). A broker
// that does not answer, or answers with no leader, is passed over for the
// next: kafka-go's shared transport serves metadata from a cache that a
// dead broker's address keeps stale, and a broker just cut off may not know
// the new leader yet. With every answer leaderless the leader is -1.
func partitionZero(ctx context.Context, brokers []string, topic string) (partition, error) {
	var last error
	leaderless := false
	for _, addr := range brokers {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		conn, err := kafka.DialContext(dctx, "tcp", addr)
		cancel()
		if err != nil {
			last = err
			continue
		}
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		pts, err := conn.ReadPartitions(topic)
		conn.Close()
		if err != nil {
			last = err
			continue
		}
		last = fmt.Errorf("topic %s has no partition 0: %+v", topic, pts)
		for _, pt := range pts {
			if pt.ID != 0 {
				continue
			}
			if pt.Leader.Host == "" {
				leaderless, last = true, fmt.Errorf("%s has no leader of partition 0: %+v", topic, pts)
				break
			}
			out := partition{leader: pt.Leader.ID}
			for _, r := range pt.Isr {
				out.isr = append(out.isr, r.ID)
			}
			sort.Ints(out.isr)
			return out, nil
		}
	}
	if leaderless {
		return partition{leader: -1}, nil
	}
	return partition{}, fmt.Errorf("no broker answers metadata of %s: %w", topic, last)
}
