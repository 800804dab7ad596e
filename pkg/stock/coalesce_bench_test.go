package stock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// BenchmarkCoalescedAdmit is the hot path's Redis cost: Store.Admit through
// a Coalescer (the ingress' defaults: 128 a batch, 4 flushers) from 64
// goroutines per core, on whatever FLASHSALE_REDIS_ADDR names.
//
//	go test -run '^$' -bench CoalescedAdmit -count 5 ./pkg/stock/
func BenchmarkCoalescedAdmit(b *testing.B) {
	rdb := testenv.Redis(b)
	co := stock.NewCoalescer(rdb, stock.CoalesceConfig{MaxBatch: 128, Flushers: 4})
	b.Cleanup(co.Close)
	s := stock.New(rdb).WithCoalescer(co)
	item := testenv.ItemID()
	now := time.Now()
	if err := s.Warm(context.Background(), stock.Snapshot{ItemID: item, Stock: 1 << 40, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PerUserLimit: 1}); err != nil {
		b.Fatal(err)
	}
	var user atomic.Int64
	b.SetParallelism(64)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, UserID: user.Add(1), Qty: 1, RequestID: reqid.New(item, time.Now())})
			cancel()
			if err != nil || r.Code != stock.Admitted {
				b.Errorf("%+v %v", r, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
}
