package orderlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// Setup's topics carry their durability as topic settings of their own
// (min.insync.replicas, no unclean leader election), not whatever the
// broker's defaults happen to be; an existing topic is brought to them.
func TestEnsureTopicsDurability(t *testing.T) {
	brokers := testenv.Kafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fresh := "durable-" + testenv.Suffix()
	old := "durable-old-" + testenv.Suffix()
	// A topic someone created by hand: 1 partition, broker defaults.
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	if _, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: old, NumPartitions: 1, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
	specs := []orderlog.TopicSpec{{Name: fresh, Partitions: 3}, {Name: old, Partitions: 4}}
	rep, err := orderlog.EnsureTopics(ctx, brokers, specs, orderlog.Durability{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Replication != min(3, rep.Brokers) || rep.MinInsync != max(1, rep.Replication-1) {
		t.Fatalf("durability for %d brokers: %+v", rep.Brokers, rep)
	}
	if len(rep.Created) != 1 || rep.Created[0] != fresh {
		t.Errorf("created %v, want only %s", rep.Created, fresh)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], old) || !strings.Contains(rep.Warnings[0], "1 partitions, configured 4") {
		t.Errorf("warnings %q, want one about %s's partitions", rep.Warnings, old)
	}
	for _, topic := range []string{fresh, old} {
		cfg, err := orderlog.TopicConfigs(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		if cfg["min.insync.replicas"] != "1" || cfg["unclean.leader.election.enable"] != "false" {
			t.Errorf("%s: configs %v", topic, cfg)
		}
		if src, err := configSource(ctx, client, topic, "min.insync.replicas"); err != nil || src != 1 {
			t.Errorf("%s: min.insync.replicas comes from source %d (%v), want 1 (the topic's own setting)", topic, src, err)
		}
	}
	// Idempotent: a second run creates nothing and fails nothing.
	if rep, err := orderlog.EnsureTopics(ctx, brokers, specs, orderlog.Durability{}); err != nil || len(rep.Created) != 0 {
		t.Fatalf("second run: %+v %v", rep, err)
	}
}

// A replication the cluster cannot hold is refused before anything is
// created, as is a min.insync.replicas above the replication.
func TestEnsureTopicsRefusesImpossibleDurability(t *testing.T) {
	brokers := testenv.Kafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := "durable-no-" + testenv.Suffix()
	specs := []orderlog.TopicSpec{{Name: topic, Partitions: 1}}
	_, err := orderlog.EnsureTopics(ctx, brokers, specs, orderlog.Durability{Replication: 99})
	if !errors.Is(err, orderlog.ErrTooFewBrokers) {
		t.Fatalf("replication 99: %v, want ErrTooFewBrokers", err)
	}
	if _, err := orderlog.EnsureTopics(ctx, brokers, specs, orderlog.Durability{Replication: 1, MinInsync: 2}); !errors.Is(err, orderlog.ErrUnderReplicated) {
		t.Fatalf("min.insync 2 of 1: %v, want ErrUnderReplicated", err)
	}
	meta, err := (&kafka.Client{Addr: kafka.TCP(brokers...)}).Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range meta.Topics {
		if tp.Name == topic {
			t.Fatalf("%s was created although its durability was refused", topic)
		}
	}
}

// configSource is DescribeConfigs' source of one topic setting: 1 is the
// topic's own setting; 2 to 5 are broker-level settings and defaults.
func configSource(ctx context.Context, c *kafka.Client, topic, name string) (int8, error) {
	resp, err := c.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{name}}}})
	if err != nil {
		return 0, err
	}
	for _, r := range resp.Resources {
		for _, e := range r.ConfigEntries {
			if e.ConfigName == name {
				return e.ConfigSource, nil
			}
		}
	}
	return 0, errors.New("not described")
}

// A topic EnsureTopics created is one a producer can write to as soon as
// it returns: every partition's leader serves it. A topic is in the
// metadata a moment before its partitions' leaders take it, and a produce
// then is refused "Not Leader For Partition" (the bench's throwaway topic
// lost 4 of 43 publishes so on a fresh machine). Each of 5 new topics of 12
// partitions is asked at once, with no retry, for every partition's last
// offset: each partition answers without an error.
func TestEnsureTopicsReturnsOnceLeadersServe(t *testing.T) {
	brokers := testenv.Kafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	for round := range 5 {
		topic := "leaders-" + testenv.Suffix()
		if _, err := orderlog.EnsureTopics(ctx, brokers, []orderlog.TopicSpec{{Name: topic, Partitions: 12}}, orderlog.Durability{}); err != nil {
			t.Fatal(err)
		}
		reqs := make([]kafka.OffsetRequest, 12)
		for p := range reqs {
			reqs[p] = kafka.LastOffsetOf(p)
		}
		resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, po := range resp.Topics[topic] {
			if po.Error != nil {
				t.Fatalf("round %d: partition %d of a topic EnsureTopics returned: %v", round, po.Partition, po.Error)
			}
		}
		if n := len(resp.Topics[topic]); n != 12 {
			t.Fatalf("round %d: %d partitions answered, want 12", round, n)
		}
	}
}
