package auditor

import (
	"context"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// MaxBuckets bounds the bucket label: only buckets 0 to MaxBuckets-1 of a
// bucketed item get series of their own (FLASHSALE_MAX_BUCKETS' default,
// an ingress setting the reaper does not read). With MaxItems items that
// is at most MaxItems*MaxBuckets series per gauge, and a flash sale has one
// or two bucketed items. The audit itself, and flashsale_audit_violations,
// still cover every bucket.
const MaxBuckets = 64

// bucketMetrics are the gauges of a bucketed item's buckets. An unbucketed
// item has none: its one bucket is the item, whose gauges say it all.
type bucketMetrics struct {
	stock     *prometheus.GaugeVec
	pending   *prometheus.GaugeVec
	drift     *prometheus.GaugeVec
	wanted    *prometheus.GaugeVec
	transfers *prometheus.GaugeVec

	mu       sync.Mutex
	exported map[string]int // item -> buckets with series
}

func newBucketMetrics(f promauto.Factory) *bucketMetrics {
	return &bucketMetrics{
		stock: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_bucket_stock_units",
			Help: "Units one bucket of a bucketed item still has to sell, per store (mysql, redis)."}, []string{"item", "bucket", "store"}),
		pending: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_bucket_pending_units",
			Help: "Units reserved in one bucket's Redis whose request has no outcome yet."}, []string{"item", "bucket"}),
		drift: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_bucket_stock_drift_units",
			Help: "One bucket's Redis stock plus pending reservations minus its MySQL stock; 0 when the stores agree, short blips while a transfer between buckets runs."}, []string{"item", "bucket"}),
		wanted: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_bucket_wanted",
			Help: "1 when a buyer found the bucket short within the last 2 s (its want flag, the rebalancer's demand signal), else 0."}, []string{"item", "bucket"}),
		transfers: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_transfers_done",
			Help: "Transfers between the buckets of a bucketed item finished so far, as Redis counts them (rises while the rebalancer moves stock)."}, []string{"item"}),
		exported: map[string]int{},
	}
}

// bucketSignals are the Redis readings the gauges add to a bucketed
// item's audit.
type bucketSignals struct {
	wants []bool
	mark  stock.TransferMark
}

// readSignals reads the want flags of a bucketed item's exported buckets
// and its transfer counter.
func readSignals(ctx context.Context, st *stock.Store, r audit.Report) (bucketSignals, error) {
	var s bucketSignals
	if r.Buckets <= 1 {
		return s, nil
	}
	var err error
	if s.wants, err = st.BucketWants(ctx, r.ItemID, min(r.Buckets, MaxBuckets)); err != nil {
		return s, err
	}
	s.mark, err = st.ReadTransferMark(ctx, r.ItemID)
	return s, err
}

// record exports the buckets of r (none for an unbucketed item) and drops
// the series of buckets the item no longer has.
func (m *bucketMetrics) record(r audit.Report, s bucketSignals) {
	item := strconv.FormatInt(r.ItemID, 10)
	n := min(len(r.PerBucket), MaxBuckets)
	for _, b := range r.PerBucket[:n] {
		bucket := strconv.Itoa(b.Bucket)
		m.stock.WithLabelValues(item, bucket, "mysql").Set(float64(b.DBStock))
		m.stock.WithLabelValues(item, bucket, "redis").Set(float64(b.RedisStock))
		m.pending.WithLabelValues(item, bucket).Set(float64(b.PendingQty))
		m.drift.WithLabelValues(item, bucket).Set(float64(b.RedisStock + b.PendingQty - b.DBStock))
		wanted := 0.0
		if b.Bucket < len(s.wants) && s.wants[b.Bucket] {
			wanted = 1
		}
		m.wanted.WithLabelValues(item, bucket).Set(wanted)
	}
	if n > 0 {
		m.transfers.WithLabelValues(item).Set(float64(s.mark.Done))
	} else {
		m.transfers.DeleteLabelValues(item)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for b := n; b < m.exported[item]; b++ {
		l := prometheus.Labels{"item": item, "bucket": strconv.Itoa(b)}
		for _, v := range m.vecs() {
			v.DeletePartialMatch(l)
		}
	}
	if n > 0 {
		m.exported[item] = n
	} else {
		delete(m.exported, item)
	}
}

func (m *bucketMetrics) vecs() []*prometheus.GaugeVec {
	return []*prometheus.GaugeVec{m.stock, m.pending, m.drift, m.wanted}
}

// forget deletes every bucket series of item.
func (m *bucketMetrics) forget(item string) {
	l := prometheus.Labels{"item": item}
	for _, v := range append(m.vecs(), m.transfers) {
		v.DeletePartialMatch(l)
	}
	m.mu.Lock()
	delete(m.exported, item)
	m.mu.Unlock()
}
