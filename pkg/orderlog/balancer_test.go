package orderlog

import (
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

func TestStockBalancerSpreadsBucketsAndKeepsItems(t *testing.T) {
	parts := make([]int, 12)
	for i := range parts {
		parts[i] = i
	}
	var b StockBalancer
	var h kafka.Hash
	for item := int64(1); item <= 500; item++ {
		seen := map[int]bool{}
		for bucket := range 8 {
			m := OrderMessage{ItemID: item, RequestID: reqid.NewIn(item, bucket, time.Now())}
			msg := kafka.Message{Key: m.Key()}
			p := b.Balance(msg, parts...)
			if bucket == 0 && p != h.Balance(msg, parts...) {
				t.Fatalf("item %d bucket 0 on partition %d, kafka.Hash's %d: an unbucketed item must stay where it was", item, p, h.Balance(msg, parts...))
			}
			seen[p] = true
		}
		if len(seen) != 8 {
			t.Fatalf("item %d: 8 buckets on %d distinct partitions of 12", item, len(seen))
		}
	}
	if p := b.Balance(kafka.Message{Key: []byte("not.a-bucket")}, parts...); p < 0 || p >= 12 {
		t.Fatalf("odd key on partition %d", p)
	}
}
