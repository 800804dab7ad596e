//go:build cluster

package orderlog_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// On three brokers setup's topics get three replicas, all in sync, and
// min.insync.replicas 2 as their own setting: a 202 then stands on two
// disks and one broker may be lost. Both with setup's settings from the
// environment (stack.sh env --cluster sets FLASHSALE_TOPIC_REPLICATION=3)
// and with its default, min(3, brokers).
func TestClusterEnsureTopicsReplicatesThrice(t *testing.T) {
	brokers := testenv.KafkaCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, dur := range map[string]orderlog.Durability{"setup-settings": testenv.Durability(t), "default": {}} {
		t.Run(fmt.Sprintf("%s/replication=%d", name, dur.Replication), func(t *testing.T) {
			orders, dlq := "cluster.orders."+testenv.Suffix(), "cluster.dlq."+testenv.Suffix()
			specs := orderlog.Topics(orders, dlq, 12)
			rep, err := orderlog.EnsureTopics(ctx, brokers, specs, dur)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Brokers != 3 || rep.Replication != 3 || rep.MinInsync != 2 || len(rep.Created) != 2 {
				t.Fatalf("report %+v, want 3 brokers, replication 3, min.insync 2, both topics created", rep)
			}
			for _, s := range specs {
				expectReplicated(ctx, t, brokers, s.Name, s.Partitions)
				cfg, err := orderlog.TopicConfigs(ctx, brokers, s.Name)
				if err != nil {
					t.Fatal(err)
				}
				if cfg["min.insync.replicas"] != "2" || cfg["unclean.leader.election.enable"] != "false" {
					t.Errorf("%s: configs %v, want min.insync.replicas 2 and no unclean leader election", s.Name, cfg)
				}
			}
			if rep, err := orderlog.EnsureTopics(ctx, brokers, specs, dur); err != nil || len(rep.Created) != 0 {
				t.Fatalf("second run: %+v %v", rep, err)
			}
		})
	}

	// A topic made by hand with one replica is refused, not silently used.
	old := "cluster.old." + testenv.Suffix()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	if _, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: old, NumPartitions: 1, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := orderlog.EnsureTopics(ctx, brokers, orderlog.Topics(old, "cluster.dlq."+testenv.Suffix(), 1), testenv.Durability(t)); !errors.Is(err, orderlog.ErrUnderReplicated) {
		t.Fatalf("topic with 1 replica on 3 brokers: %v, want ErrUnderReplicated", err)
	}
}

// expectReplicated checks topic's partitions: partitions of them, each with
// three distinct replicas all in sync, their leaders on every broker when
// there are enough partitions (so a produce talks to all three).
func expectReplicated(ctx context.Context, t *testing.T, brokers []string, topic string, partitions int) {
	t.Helper()
	meta, err := (&kafka.Client{Addr: kafka.TCP(brokers...)}).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Topics) != 1 || meta.Topics[0].Error != nil || len(meta.Topics[0].Partitions) != partitions {
		t.Fatalf("%s: metadata %+v, want %d partitions", topic, meta.Topics, partitions)
	}
	leaders := map[int]bool{}
	for _, p := range meta.Topics[0].Partitions {
		replicas := map[int]bool{}
		for _, r := range p.Replicas {
			replicas[r.ID] = true
		}
		if len(replicas) != 3 || len(p.Isr) != 3 {
			t.Errorf("%s partition %d: replicas %v, in sync %v, want 3 distinct, all in sync", topic, p.ID, p.Replicas, p.Isr)
		}
		leaders[p.Leader.ID] = true
	}
	if partitions >= 3 && len(leaders) != 3 {
		t.Errorf("%s: leaders on brokers %v, want all three", topic, leaders)
	}
}
