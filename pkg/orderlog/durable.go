package orderlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// Durability is how the pipeline's topics are replicated. A 202 is sent
// after acks from all in-sync replicas (RequireAll), which promises only as
// many copies as min.insync.replicas: with the broker defaults (replication
// 1, min.insync.replicas 1) that is one disk.
type Durability struct {
	// Replication is the replication factor of topics setup creates, and
	// the least an existing topic must have. 0 = min(3, brokers): set it
	// explicitly on a cluster, where setup may run while brokers are still
	// joining.
	Replication int
	// MinInsync is min.insync.replicas of the topics. 0 = max(1,
	// Replication-1): one broker may be lost and 202s still mean two copies.
	MinInsync int
}

// Topic settings setup enforces besides min.insync.replicas. Unclean leader
// election would let an out-of-sync replica lead and drop acknowledged
// messages: acknowledged orders would vanish.
const (
	configMinInsync = "min.insync.replicas"
	configUnclean   = "unclean.leader.election.enable"
)

// TopicsReport is what EnsureTopics did and found.
type TopicsReport struct {
	Brokers     int
	Replication int
	MinInsync   int
	Created     []string
	// Warnings name what is below the configuration but does not endanger
	// an acknowledged message (fewer partitions than configured: fewer
	// useful consumer replicas).
	Warnings []string
}

// ErrUnderReplicated is returned for an existing topic with fewer replicas
// than configured, and for a configuration that contradicts itself.
var ErrUnderReplicated = errors.New("orderlog: topic replication below the configured durability")

// ErrTooFewBrokers is returned while the cluster has fewer brokers than the
// configured replication: brokers may still be joining, so callers retry.
var ErrTooFewBrokers = errors.New("orderlog: fewer brokers than the configured replication")

// resolve fills the zero fields of d for a cluster of n brokers and checks
// the cluster can hold it.
func (d Durability) resolve(n int) (Durability, error) {
	if d.Replication == 0 {
		d.Replication = min(3, n)
	}
	if d.MinInsync == 0 {
		d.MinInsync = max(1, d.Replication-1)
	}
	switch {
	case d.Replication > n:
		return d, fmt.Errorf("%w: replication %d needs %d brokers, the cluster has %d", ErrTooFewBrokers, d.Replication, d.Replication, n)
	case d.MinInsync > d.Replication:
		return d, fmt.Errorf("%w: min.insync.replicas %d above replication %d: every publish would fail", ErrUnderReplicated, d.MinInsync, d.Replication)
	}
	return d, nil
}

// EnsureTopics creates the topics that do not exist yet with the wanted
// partitions and durability, and brings existing ones to it: their
// min.insync.replicas and unclean leader election are set (idempotently);
// a topic with fewer replicas than configured is refused with
// ErrUnderReplicated (growing replication is a partition reassignment, an
// operator's decision); fewer partitions than configured is a warning. It
// never deletes, shrinks or repartitions a topic.
func EnsureTopics(ctx context.Context, brokers []string, specs []TopicSpec, dur Durability) (TopicsReport, error) {
	return (*Security)(nil).EnsureTopics(ctx, brokers, specs, dur)
}

// EnsureTopics is the package EnsureTopics over s.
func (s *Security) EnsureTopics(ctx context.Context, brokers []string, specs []TopicSpec, dur Durability) (TopicsReport, error) {
	client := s.Client(brokers)
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return TopicsReport{}, fmt.Errorf("orderlog: metadata: %w", err)
	}
	rep := TopicsReport{Brokers: len(meta.Brokers)}
	d, err := dur.resolve(len(meta.Brokers))
	if err != nil {
		return rep, err
	}
	rep.Replication, rep.MinInsync = d.Replication, d.MinInsync
	configs := []kafka.ConfigEntry{
		{ConfigName: configMinInsync, ConfigValue: strconv.Itoa(d.MinInsync)},
		{ConfigName: configUnclean, ConfigValue: "false"},
	}
	existing := map[string]kafka.Topic{}
	for _, t := range meta.Topics {
		if t.Error == nil {
			existing[t.Name] = t
		}
	}
	var create []kafka.TopicConfig
	var alter []kafka.IncrementalAlterConfigsRequestResource
	var errs []error
	for _, s := range specs {
		t, ok := existing[s.Name]
		if !ok {
			create = append(create, kafka.TopicConfig{Topic: s.Name, NumPartitions: s.Partitions,
				ReplicationFactor: d.Replication, ConfigEntries: configs})
			continue
		}
		for _, p := range t.Partitions {
			if len(p.Replicas) < d.Replication {
				errs = append(errs, fmt.Errorf("%w: %s partition %d has %d replicas, configured %d (reassign its partitions with kafka-reassign-partitions, or lower FLASHSALE_TOPIC_REPLICATION knowingly)",
					ErrUnderReplicated, s.Name, p.ID, len(p.Replicas), d.Replication))
				break
			}
		}
		if len(t.Partitions) < s.Partitions {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s has %d partitions, configured %d: at most %d consumer replicas are useful (add partitions between sales)",
				s.Name, len(t.Partitions), s.Partitions, len(t.Partitions)))
		}
		var set []kafka.IncrementalAlterConfigsRequestConfig
		for _, c := range configs {
			set = append(set, kafka.IncrementalAlterConfigsRequestConfig{Name: c.ConfigName, Value: c.ConfigValue, ConfigOperation: kafka.ConfigOperationSet})
		}
		alter = append(alter, kafka.IncrementalAlterConfigsRequestResource{ResourceType: kafka.ResourceTypeTopic, ResourceName: s.Name, Configs: set})
	}
	if err := errors.Join(errs...); err != nil {
		return rep, err
	}
	if len(create) > 0 {
		resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: create})
		if err != nil {
			return rep, fmt.Errorf("orderlog: create topics: %w", err)
		}
		for _, c := range create {
			switch terr := resp.Errors[c.Topic]; {
			case terr == nil:
				rep.Created = append(rep.Created, c.Topic)
			case errors.Is(terr, kafka.TopicAlreadyExists):
				// Another setup won the race; its topic has the same settings.
			default:
				return rep, fmt.Errorf("orderlog: create topic %s: %w", c.Topic, terr)
			}
		}
		if err := awaitLeaders(ctx, client, create); err != nil {
			return rep, err
		}
	}
	if len(alter) > 0 {
		resp, err := client.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: alter})
		if err != nil {
			return rep, fmt.Errorf("orderlog: set topic configs: %w", err)
		}
		for _, r := range resp.Resources {
			if r.Error != nil {
				return rep, fmt.Errorf("orderlog: set configs of %s: %w", r.ResourceName, r.Error)
			}
		}
	}
	return rep, nil
}

// TopicConfigs reads the durability settings of topic (for checks and tests).
func TopicConfigs(ctx context.Context, brokers []string, topic string) (map[string]string, error) {
	return (*Security)(nil).TopicConfigs(ctx, brokers, topic)
}

// TopicConfigs is the package TopicConfigs over s; a read Kafka refuses as
// temporary (a topic just created, not yet known to the broker asked) is
// tried again for about a second (retryTemporary).
func (s *Security) TopicConfigs(ctx context.Context, brokers []string, topic string) (map[string]string, error) {
	return retryTemporary(ctx, func() (map[string]string, error) { return s.topicConfigsOnce(ctx, brokers, topic) })
}

func (s *Security) topicConfigsOnce(ctx context.Context, brokers []string, topic string) (map[string]string, error) {
	client := s.Client(brokers)
	resp, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{configMinInsync, configUnclean},
	}}})
	if err != nil {
		return nil, fmt.Errorf("orderlog: describe configs of %s: %w", topic, err)
	}
	out := map[string]string{}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return nil, fmt.Errorf("orderlog: describe configs of %s: %w", topic, r.Error)
		}
		for _, e := range r.ConfigEntries {
			out[e.ConfigName] = e.ConfigValue
		}
	}
	return out, nil
}

// leadersWait bounds how long EnsureTopics waits for the leaders of the
// topics it created, and leadersPoll is how often it asks.
const (
	leadersWait = 30 * time.Second
	leadersPoll = 50 * time.Millisecond
)

// awaitLeaders returns once every partition of topics answers a
// ListOffsets from its leader. A topic is in the metadata a moment before
// each partition's leader takes it, and a produce in that moment is refused
// "Not Leader For Partition": setup's "topics ready" would have been
// untrue, and the bench's throwaway topics lost publishes to it.
func awaitLeaders(ctx context.Context, client *kafka.Client, topics []kafka.TopicConfig) error {
	reqs := make(map[string][]kafka.OffsetRequest, len(topics))
	for _, t := range topics {
		for p := range t.NumPartitions {
			reqs[t.Topic] = append(reqs[t.Topic], kafka.LastOffsetOf(p))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, leadersWait)
	defer cancel()
	for {
		err := leadersServe(ctx, client, reqs)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("orderlog: leaders of the new topics: %w", err)
		case <-time.After(leadersPoll):
		}
	}
}

// leadersServe asks every partition of reqs for its last offset, once.
func leadersServe(ctx context.Context, client *kafka.Client, reqs map[string][]kafka.OffsetRequest) error {
	resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: reqs})
	if err != nil {
		return err
	}
	for topic, rs := range reqs {
		got := resp.Topics[topic]
		if len(got) != len(rs) {
			return fmt.Errorf("%s: %d of %d partitions answered", topic, len(got), len(rs))
		}
		for _, po := range got {
			if po.Error != nil {
				return fmt.Errorf("%s partition %d: %w", topic, po.Partition, po.Error)
			}
		}
	}
	return nil
}
