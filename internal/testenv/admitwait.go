package testenv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// BenchAdmitWait runs stock.Store.Admit on s from parallel goroutines,
// without and with waiting for one replica (replicas=0, replicas=1), side
// by side: each sub-benchmark admits one unit per new buyer of a new item
// with stock for all of them, and reports admissions a second. An
// admission that is refused, fails or reports fewer replicas than it waited
// for fails the benchmark. Both stock's single-primary benchmark and the
// faults suite's Redis Cluster one run it.
func BenchAdmitWait(b *testing.B, s *stock.Store) {
	for _, wait := range []int{0, 1} {
		b.Run(fmt.Sprintf("replicas=%d", wait), func(b *testing.B) {
			item := ItemID()
			now := time.Now()
			if err := s.Warm(context.Background(), stock.Snapshot{ItemID: item, Stock: int64(b.N) + 1000, StartsAt: now.Add(-time.Minute),
				EndsAt: now.Add(time.Hour), PerUserLimit: 1}); err != nil {
				b.Fatal(err)
			}
			var user atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: user.Add(1), Qty: 1,
						RequestID: reqid.New(item, time.Now()), WaitReplicas: wait, WaitTimeout: time.Second})
					if err != nil || r.Code != stock.Admitted || r.Replicas < wait {
						b.Errorf("%+v %v", r, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
		})
	}
}
