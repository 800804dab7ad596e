package orderlog_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
)

// BenchmarkHotKeyPublish: synchronous acks=all publishes of one hot item
// (one key, one partition) from many goroutines, as a sale's admissions
// make them, through kafka-go's Writer alone (what the ingress used) and
// through the Publisher over it (what it uses now), with the ingress's
// default batching. ns/op is the inverse of the throughput; p50-ms and
// p99-ms are each publish's latency.
func BenchmarkHotKeyPublish(b *testing.B) {
	brokers := testenv.Kafka(b)
	topic, _, _ := testenv.Topics(b, 1)
	sec := testenv.KafkaSecurity(b)
	for _, tc := range []struct {
		name string
		open func() (orderlog.MessageWriter, *kafka.Writer, func() error)
	}{
		{"writer", func() (orderlog.MessageWriter, *kafka.Writer, func() error) {
			w := sec.NewBatchedWriter(brokers, topic, 3*time.Second, orderlog.DefaultBatching())
			return w, w, w.Close
		}},
		{"publisher", func() (orderlog.MessageWriter, *kafka.Writer, func() error) {
			p := sec.NewPublisher(brokers, topic, 3*time.Second, orderlog.DefaultBatching())
			return p, p.Writer(), p.Close
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w, kw, closeW := tc.open()
			defer closeW()
			ctx := context.Background()
			if err := orderlog.Warm(ctx, kw); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(16) // handlers mostly wait on acks
			publishParallel(b, w, func() string { return "42" })
		})
	}
}

// BenchmarkManyKeyPublish: the same synchronous publishes through the
// Publisher over a 12-partition topic (setup's default), as one hot item
// and spread over 1,000 items (keys), as a many-item sale makes them.
// 1,000 keys share 12 partitions, about 83 keys each, and kafka-go sends a
// partition's batches one at a time: the Publisher's lanes are partitions
// (Warm learns them) so that those keys leave in one call per round trip.
func BenchmarkManyKeyPublish(b *testing.B) {
	brokers := testenv.Kafka(b)
	topic, _, _ := testenv.Topics(b, 12)
	sec := testenv.KafkaSecurity(b)
	for _, keys := range []int{1, 1000} {
		b.Run(strconv.Itoa(keys)+"keys", func(b *testing.B) {
			p := sec.NewPublisher(brokers, topic, 3*time.Second, orderlog.DefaultBatching())
			defer p.Close()
			ctx := context.Background()
			if err := p.Warm(ctx); err != nil {
				b.Fatal(err)
			}
			if got := len(p.Partitions()); got != 12 {
				b.Fatalf("lanes follow %d partitions, want 12", got)
			}
			var next atomic.Int64
			b.SetParallelism(32) // 64 handlers on 2 cores, as -concurrency 64
			publishParallel(b, p, func() string { return strconv.FormatInt(next.Add(1)%int64(keys), 10) })
		})
	}
}

// publishParallel times b.N synchronous publishes of one order message,
// keyed by key(), from b's parallel goroutines, and reports each publish's
// p50 and p99 next to ns/op.
func publishParallel(b *testing.B, w orderlog.MessageWriter, key func() string) {
	ctx := context.Background()
	val := []byte(`{"request_id":"bench","item_id":42,"user_id":1,"qty":1}`)
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			start := time.Now()
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := w.WriteMessages(pctx, kafka.Message{Key: []byte(key()), Value: val})
			cancel()
			if err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		b.ReportMetric(float64(lat[n/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[min(n-1, n*99/100)].Microseconds())/1000, "p99-ms")
	}
}
