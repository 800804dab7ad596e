package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Group timings of the drain's replicas, shorter than kafka-go's defaults
// (3 s, 30 s, 30 s) as in the bench's pipeline tests: replicas that join
// one after the other settle in about a second instead of several, and
// the write rate is measured once the group is whole (consumeAll), so
// these only bound how long the drain waits for that.
const (
	drainHeartbeat = 500 * time.Millisecond
	drainSession   = 6 * time.Second
	drainRebalance = 6 * time.Second
)

// drainReplica is one order writer of the drain's consumer group, with
// what a consumer process has of its own: a MySQL pool opened as
// consumer/main.go opens it, a Redis client and its metrics. Its Kafka
// client id names it in the group's description.
type drainReplica struct {
	clientID string
	db       *sql.DB
	rdb      redis.UniversalClient
	m        *orderwriter.Metrics
	cons     *orderwriter.Consumer
}

// ordered is how many orders this replica wrote.
func (r *drainReplica) ordered() int64 {
	return int64(testutil.ToFloat64(r.m.Outcomes.WithLabelValues(string(store.Ordered), "")))
}

func (r *drainReplica) close() {
	r.db.Close()
	r.rdb.Close()
}

// newReplicas builds n order writers of group on topic, not yet running.
func newReplicas(ctx context.Context, c config.Common, cc config.Consumer, dsn string, n int, topic, dlq, group string) ([]*drainReplica, error) {
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var out []*drainReplica
	fail := func(err error) ([]*drainReplica, error) {
		for _, r := range out {
			r.close()
		}
		return nil, err
	}
	for i := range n {
		db, err := store.Open(ctx, dsn, max(8, cc.ItemParallelism+2), c.StoreTimeout)
		if err != nil {
			return fail(fmt.Errorf("drain: replica %d: %w", i, err))
		}
		r := &drainReplica{clientID: fmt.Sprintf("flashsale-drain-%d", i), db: db,
			rdb: stock.NewClientFrom(c.RedisConn(), c.StoreTimeout, 32), m: orderwriter.NewMetrics(prometheus.NewRegistry())}
		out = append(out, r)
		r.cons, err = orderwriter.New(orderwriter.Config{
			Brokers: c.Brokers(), Topic: topic, DLQTopic: dlq, GroupID: group,
			BatchSize: cc.BatchSize, BatchWait: cc.BatchWait, MaxBackoff: cc.MaxBackoff, GiveUpAfter: cc.GiveUpAfter,
			ItemParallelism: cc.ItemParallelism, BatchesInFlight: cc.BatchesInFlight,
			PaymentWindow: c.PaymentWindow, StoreTimeout: c.StoreTimeout, DrainTimeout: 10 * time.Second,
			Dialer:            kafkaDialer(r.clientID),
			HeartbeatInterval: drainHeartbeat, SessionTimeout: drainSession, RebalanceTimeout: drainRebalance,
		}, orderwriter.Deps{DB: db, Stock: stock.New(r.rdb)}, r.m, quiet)
		if err != nil {
			return fail(err)
		}
	}
	return out, nil
}

// groupWhole reports whether group is stable with n members, each with a
// partition of topic when there are enough, and which partitions each
// client id holds.
func groupWhole(ctx context.Context, brokers []string, group, topic string, n, partitions int) (map[string][]int, bool, error) {
	client := kafkaSec.Client(brokers)
	resp, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return nil, false, err
	}
	if len(resp.Groups) != 1 || resp.Groups[0].Error != nil {
		return nil, false, fmt.Errorf("drain: describe group %s: %v", group, resp.Groups)
	}
	g := resp.Groups[0]
	if g.GroupState != "Stable" || len(g.Members) != n {
		return nil, false, nil
	}
	held := map[string][]int{}
	for _, m := range g.Members {
		for _, t := range m.MemberAssignments.Topics {
			if t.Topic == topic {
				held[m.ClientID] = append(held[m.ClientID], t.Partitions...)
			}
		}
		slices.Sort(held[m.ClientID])
		if len(held[m.ClientID]) == 0 && partitions >= n {
			return nil, false, nil
		}
	}
	return held, true, nil
}

// replicaShare is one replica's part of the drain.
type replicaShare struct {
	ClientID   string
	Partitions []int
	Orders     int64
}

func shares(rs []*drainReplica, held map[string][]int) []replicaShare {
	out := make([]replicaShare, len(rs))
	for i, r := range rs {
		out[i] = replicaShare{ClientID: r.clientID, Partitions: held[r.clientID], Orders: r.ordered()}
	}
	return out
}

// partitionCounts lists the messages of each partition that has any, in
// partition order, from the lag of a group that has committed nothing.
func partitionCounts(lag map[int]int64) [][2]int64 {
	var out [][2]int64
	for p, n := range lag {
		if n > 0 {
			out = append(out, [2]int64{int64(p), n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
