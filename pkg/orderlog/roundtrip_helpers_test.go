package orderlog_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// groupRoundTrip publishes n order messages over keys items through the
// pipeline's writer (acks from all in-sync replicas), has two members of
// group read them with explicit commits, waits until every message was seen
// and the group has no lag, and returns the partitions the messages came
// from. It fails the test on any error or a missing message.
func groupRoundTrip(t *testing.T, brokers []string, topic, group string, n, keys int) map[int]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := orderlog.NewWriter(brokers, topic, 10*time.Second)
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		item := int64(i%keys + 1)
		m := orderlog.OrderMessage{RequestID: reqid.New(item, time.Now()), ItemID: item, UserID: int64(i + 1), Qty: 1}
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = kafka.Message{Key: m.Key(), Value: b}
	}
	writeAll(ctx, t, w, msgs)

	var mu sync.Mutex
	seen := map[string]int{}
	partitions := map[int]bool{}
	var wg sync.WaitGroup
	rctx, stop := context.WithCancel(ctx)
	for member := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, GroupID: group,
				StartOffset: kafka.FirstOffset, CommitInterval: 0, MaxWait: 200 * time.Millisecond})
			defer r.Close()
			for {
				m, err := r.FetchMessage(rctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("member %d fetch: %v", member, err)
					}
					return
				}
				om, err := orderlog.Decode(m.Value)
				if err != nil {
					t.Errorf("decode: %v", err)
				}
				if err := r.CommitMessages(rctx, m); err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("commit: %v", err)
				}
				mu.Lock()
				seen[om.RequestID]++
				partitions[m.Partition] = true
				mu.Unlock()
			}
		}()
	}
	testenv.Eventually(t, 90*time.Second, 100*time.Millisecond, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	}, "consumers saw fewer than %d distinct messages", n)
	testenv.WaitDrained(t, 30*time.Second, brokers, group, topic, "group still has lag after committing every message")
	stop()
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("saw %d distinct messages, want %d", len(seen), n)
	}
	return partitions
}

// writeAll writes msgs, sending again only the messages a broker refused
// with UnknownTopicOrPartition: a topic created a moment ago is known to
// the broker that created it before its partitions' leaders all have it
// (seen on a cluster started cold: "[3] Unknown Topic Or Partition").
// Resending only those keeps every message in the log exactly once.
func writeAll(ctx context.Context, t *testing.T, w *kafka.Writer, msgs []kafka.Message) {
	t.Helper()
	for {
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return
		}
		var we kafka.WriteErrors
		if !errors.As(err, &we) || ctx.Err() != nil {
			t.Fatalf("write: %v", err)
		}
		var again []kafka.Message
		for i, e := range we {
			if e == nil {
				continue
			}
			if !errors.Is(e, kafka.UnknownTopicOrPartition) {
				t.Fatalf("write: %v", e)
			}
			again = append(again, msgs[i])
		}
		msgs = again
		// Real time is the subject: the broker asked for a retry (the new
		// topic reaches its partitions' leaders in the cluster's own time),
		// and the resend waits a pause first, as a client's retry does.
		time.Sleep(200 * time.Millisecond)
	}
}
