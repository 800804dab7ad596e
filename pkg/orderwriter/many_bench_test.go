package orderwriter_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
)

// BenchmarkManyItemBatch measures orders/s written for a batch of 500
// requests over 500 items (one each) against the real MariaDB, with no
// Kafka or Redis, side by side: set-based (one BatchWriter transaction per
// batch) and per-item (one ItemWriter transaction per item, 8 at a time, as
// the consumer did for a many-item round). One op is one batch.
//
// Run: go test -run '^$' -bench ManyItemBatch -benchtime 20x ./pkg/orderwriter/
func BenchmarkManyItemBatch(b *testing.B) {
	const items = 500
	db, _ := testenv.MySQL(b)
	e := &env{t: b, db: db}
	ids := make([]int64, items)
	for i := range ids {
		ids[i] = testenv.ItemID()
		e.createItem(ids[i], 1_000_000)
	}
	batch := func() [][]orderlog.OrderMessage {
		g := make([][]orderlog.OrderMessage, items)
		for i, id := range ids {
			g[i] = benchMsgs(id, 1)
		}
		return g
	}
	ctx := context.Background()
	b.Run("set-based", func(b *testing.B) {
		w := &orderwriter.BatchWriter{DB: db, PaymentWindow: 15 * time.Minute, TxTimeout: 30 * time.Second}
		start := time.Now()
		for range b.N {
			if _, short, err := w.WriteBatch(ctx, batch()); err != nil || short != nil {
				b.Fatalf("short %v, %v", short, err)
			}
		}
		b.ReportMetric(float64(b.N*items)/time.Since(start).Seconds(), "orders/s")
	})
	b.Run("per-item", func(b *testing.B) {
		w := &orderwriter.ItemWriter{DB: db, PaymentWindow: 15 * time.Minute, TxTimeout: 30 * time.Second}
		start := time.Now()
		for range b.N {
			sem := make(chan struct{}, 8)
			errs := make(chan error, items)
			for _, g := range batch() {
				sem <- struct{}{}
				go func() {
					defer func() { <-sem }()
					_, err := w.WriteItem(ctx, g[0].ItemID, g)
					errs <- err
				}()
			}
			for range items {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*items)/time.Since(start).Seconds(), "orders/s")
	})
}
