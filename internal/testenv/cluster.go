package testenv

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// The cluster tests (build tag cluster, make test-cluster) find the local
// stack's cluster mode through the same FLASHSALE_* settings as every other
// test: `stack.sh env --cluster` prints comma lists of brokers and Redis
// seeds. The helpers here check that those settings really name clusters, so
// a cluster test pointed at the single-node stack fails instead of passing
// on one node.
const clusterHint = "start the cluster with `make cluster-up` and export its settings: eval \"$(deploy/local/stack.sh env --cluster)\""

// ClusterSize is how many Kafka brokers and Redis primaries the cluster
// tests need: the cluster mode's size, the smallest where replication 3
// and a lost node mean anything.
const ClusterSize = 3

// RedisCluster returns the client the deployables build for
// FLASHSALE_REDIS_ADDR (stock.NewClient), after checking it is a Redis
// Cluster client whose slots are served by at least ClusterSize primaries.
func RedisCluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := Redis(t)
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("testenv: FLASHSALE_REDIS_ADDR=%q is one node, not a Redis Cluster seed list; %s", Common(t).RedisAddr, clusterHint)
	}
	if p := Primaries(t, cc); len(p) < ClusterSize {
		t.Fatalf("testenv: the Redis Cluster has primaries %v, want at least %d; %s", p, ClusterSize, clusterHint)
	}
	return cc
}

// Primaries returns the addresses of the primaries serving slots, as the
// cluster itself reports them (CLUSTER SLOTS), sorted.
func Primaries(t testing.TB, cc *redis.ClusterClient) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("testenv: cluster slots: %v", err)
	}
	var out []string
	for _, s := range slots {
		if len(s.Nodes) > 0 && !slices.Contains(out, s.Nodes[0].Addr) {
			out = append(out, s.Nodes[0].Addr)
		}
	}
	slices.Sort(out)
	return out
}

// PrimaryOf returns the address of the primary serving the slot of item's
// keys (they share the hash tag {item:<id>}), asking the cluster (CLUSTER
// KEYSLOT, CLUSTER SLOTS) rather than the client under test.
func PrimaryOf(t testing.TB, cc *redis.ClusterClient, item int64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	slot, err := cc.ClusterKeySlot(ctx, stock.KeysOf(item).Stock).Result()
	if err != nil {
		t.Fatalf("testenv: cluster keyslot: %v", err)
	}
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatalf("testenv: cluster slots: %v", err)
	}
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
			return s.Nodes[0].Addr
		}
	}
	t.Fatalf("testenv: no primary serves slot %d of item %d", slot, item)
	return ""
}

// ItemsOnEveryPrimary returns a fresh random item id for each primary
// (primary address -> item), so a test covers every shard and a pipeline
// of their calls is split across all of them.
func ItemsOnEveryPrimary(t testing.TB, cc *redis.ClusterClient) map[string]int64 {
	t.Helper()
	want := Primaries(t, cc)
	out := map[string]int64{}
	for range 1000 {
		id := ItemID()
		if p := PrimaryOf(t, cc, id); out[p] == 0 {
			out[p] = id
		}
		if len(out) == len(want) {
			return out
		}
	}
	t.Fatalf("testenv: 1000 random items left a primary of %v without one: %v", want, out)
	return nil
}

// KafkaCluster returns FLASHSALE_KAFKA_BROKERS after checking the cluster
// behind them has at least ClusterSize brokers.
func KafkaCluster(t testing.TB) []string {
	t.Helper()
	brokers := Kafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	meta, err := KafkaSecurity(t).Client(brokers).Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		t.Fatalf("testenv: Kafka metadata: %v", err)
	}
	if len(meta.Brokers) < ClusterSize {
		t.Fatalf("testenv: Kafka at %v has %d broker(s), want at least %d; %s", brokers, len(meta.Brokers), ClusterSize, clusterHint)
	}
	return brokers
}

// Durability returns the topic durability setup would use, from its
// settings FLASHSALE_TOPIC_REPLICATION and FLASHSALE_TOPIC_MIN_INSYNC
// (unset on the single-node stack: replication min(3, brokers) = 1).
func Durability(t testing.TB) orderlog.Durability {
	t.Helper()
	var s config.Setup
	load(t, &s, os.LookupEnv)
	return orderlog.Durability{Replication: s.TopicReplication, MinInsync: s.TopicMinInsync}
}
