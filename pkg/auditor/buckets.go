package auditor

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/bucketview"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// MaxBuckets bounds the bucket label: only buckets 0 to MaxBuckets-1 of a
// bucketed item get series of their own (FLASHSALE_MAX_BUCKETS' default,
// an ingress setting the reaper does not read). With MaxItems items that
// is at most MaxItems*MaxBuckets series per gauge, and a flash sale has one
// or two bucketed items; at the 1000 buckets FLASHSALE_MAX_BUCKETS allows
// it would be 50,000 per gauge, five gauges, on every reaper. The per-item
// gauges below (empty and starved buckets, open transfers) count every
// bucket instead, one series per item, and the FlashsaleBucketStarved alert
// reads those; the audit itself, and flashsale_audit_violations, cover
// every bucket too. The per-bucket series are for the dashboard.
const MaxBuckets = 64

// StarvedWindow is how long a want flag the audit saw keeps its bucket
// "wanted" for the starved count: the flag lives 2 s and is sampled once
// per audit, so a bucket asked for now and then would otherwise count as
// starved only in the passes that happen to see it.
const StarvedWindow = 5 * time.Minute

// bucketMetrics are the gauges of a bucketed item's buckets. An unbucketed
// item has none: its one bucket is the item, whose gauges say it all.
type bucketMetrics struct {
	stock     *prometheus.GaugeVec
	pending   *prometheus.GaugeVec
	drift     *prometheus.GaugeVec
	wanted    *prometheus.GaugeVec
	transfers *prometheus.GaugeVec
	// Per item, over every bucket.
	empty, starved, open, openAge *prometheus.GaugeVec

	mu       sync.Mutex
	exported map[string]int               // item -> buckets with series
	wantSeen map[string]map[int]time.Time // item -> bucket -> last want flag seen
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
		empty: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_bucket_empty_buckets",
			Help: "Buckets of a bucketed item with no stock left in Redis, counted over every bucket."}, []string{"item"}),
		starved: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_bucket_starved_buckets",
			Help: "Buckets of a bucketed item empty in Redis whose want flag (a buyer found them short) this auditor saw within the last 5 minutes, counted over every bucket: buyers there get 503 stock_moving until the rebalancer refills them."}, []string{"item"}),
		open: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_transfers_open",
			Help: "Transfers between the buckets of a bucketed item that are PLANNED or MOVED in MySQL (a transfer takes milliseconds; while one is open the item's warm is refused)."}, []string{"item"}),
		openAge: f.NewGaugeVec(prometheus.GaugeOpts{Name: "flashsale_stock_transfer_oldest_open_age_seconds",
			Help: "Age, by MySQL's clock, of the item's oldest open transfer between buckets (0 with none); above a minute it is stuck (FlashsaleTransferStuck)."}, []string{"item"}),
		exported: map[string]int{},
		wantSeen: map[string]map[int]time.Time{},
	}
}

// bucketSignals are the readings the gauges add to a bucketed item's
// audit.
type bucketSignals struct {
	wants []bool // every bucket's
	mark  bucketview.TransferMark
	// open transfers in MySQL, and the oldest one's age
	open    int64
	openAge time.Duration
}

// readSignals reads the want flags of every bucket of a bucketed item
// (one pipeline), its transfer counter and its open transfers.
func readSignals(ctx context.Context, db store.Querier, st *stock.Store, r audit.Report) (bucketSignals, error) {
	var s bucketSignals
	if r.Buckets <= 1 {
		return s, nil
	}
	var err error
	bv := bucketview.NewStore(st)
	if s.wants, err = bv.Wants(ctx, r.ItemID, r.Buckets); err != nil {
		return s, err
	}
	if s.mark, err = bv.ReadTransferMark(ctx, r.ItemID); err != nil {
		return s, err
	}
	s.open, s.openAge, err = store.OpenTransferAge(ctx, db, r.ItemID)
	return s, err
}

// record exports the buckets of r (none for an unbucketed item) and drops
// the series of buckets the item no longer has; now is the pass's clock.
func (m *bucketMetrics) record(r audit.Report, s bucketSignals, now time.Time) {
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if n > 0 {
		m.transfers.WithLabelValues(item).Set(float64(s.mark.Done))
		m.recordItem(item, r, s, now)
	} else {
		m.transfers.DeleteLabelValues(item)
		m.forgetItem(item)
	}
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

// recordItem sets the per-item gauges of a bucketed item from every bucket
// of r, m.mu held.
func (m *bucketMetrics) recordItem(item string, r audit.Report, s bucketSignals, now time.Time) {
	seen := m.wantSeen[item]
	if seen == nil {
		seen = map[int]time.Time{}
		m.wantSeen[item] = seen
	}
	for b, w := range s.wants {
		if w {
			seen[b] = now
		}
	}
	var empty, starved int
	for _, b := range r.PerBucket {
		if b.RedisStock > 0 {
			continue
		}
		empty++
		if at, ok := seen[b.Bucket]; ok && now.Sub(at) < StarvedWindow {
			starved++
		}
	}
	for b, at := range seen {
		if b >= len(r.PerBucket) || now.Sub(at) >= StarvedWindow {
			delete(seen, b)
		}
	}
	m.empty.WithLabelValues(item).Set(float64(empty))
	m.starved.WithLabelValues(item).Set(float64(starved))
	m.open.WithLabelValues(item).Set(float64(s.open))
	m.openAge.WithLabelValues(item).Set(s.openAge.Seconds())
}

// forgetItem drops the per-item gauges of item, m.mu held.
func (m *bucketMetrics) forgetItem(item string) {
	for _, v := range m.itemVecs() {
		v.DeleteLabelValues(item)
	}
	delete(m.wantSeen, item)
}

func (m *bucketMetrics) itemVecs() []*prometheus.GaugeVec {
	return []*prometheus.GaugeVec{m.transfers, m.empty, m.starved, m.open, m.openAge}
}

func (m *bucketMetrics) vecs() []*prometheus.GaugeVec {
	return []*prometheus.GaugeVec{m.stock, m.pending, m.drift, m.wanted}
}

// forget deletes every bucket series of item.
func (m *bucketMetrics) forget(item string) {
	l := prometheus.Labels{"item": item}
	for _, v := range m.vecs() {
		v.DeletePartialMatch(l)
	}
	m.mu.Lock()
	delete(m.exported, item)
	m.forgetItem(item)
	m.mu.Unlock()
}
