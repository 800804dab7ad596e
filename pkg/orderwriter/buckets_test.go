package orderwriter_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// newBucketedEnv is newEnv for an item of buckets stock buckets, created
// and warmed by the catalog, as the admin API does.
func newBucketedEnv(t *testing.T, partitions int, units int64, buckets int) *env {
	t.Helper()
	db, dsn := testenv.MySQL(t)
	e := &env{t: t, db: db, dsn: dsn, st: stock.New(testenv.Redis(t)), brokers: testenv.Kafka(t), item: testenv.ItemID(), total: units, buckets: buckets}
	e.topic, e.dlq, e.group = testenv.Topics(t, partitions)
	ctx := context.Background()
	now := time.Now()
	it := store.Item{ID: e.item, Name: "bucketed", PriceCents: 999, TotalStock: units, PerUserLimit: 1,
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Buckets: buckets}
	if _, err := catalog.New(db, e.st, testenv.NoLag).Put(ctx, it); err != nil {
		t.Fatal(err)
	}
	return e
}

// produceKeyed publishes msgs as the ingress does: keyed by stock row, so
// one bucket's requests share a partition and the buckets spread.
func (e *env) produceKeyed(msgs []orderlog.OrderMessage) {
	e.t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Topic: e.topic, Balancer: &orderlog.StockBalancer{}, RequiredAcks: kafka.RequireAll,
		BatchSize: 1000, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	km := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		v, err := m.Encode()
		if err != nil {
			e.t.Fatal(err)
		}
		km[i] = kafka.Message{Key: m.Key(), Value: v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, km...); err != nil {
		e.t.Fatalf("produce: %v", err)
	}
}

// TestBucketedItemWritesEachBucketsRow: 2,400 requests of an item of 8
// buckets, written by two consumer replicas over 4 partitions. Each order
// records its buyer's home bucket and took its unit from that bucket's row;
// items.stock is never touched; each bucket's MySQL row ends equal to its
// Redis stock; I1-I3 and I7 hold.
func TestBucketedItemWritesEachBucketsRow(t *testing.T) {
	t.Parallel()
	const units, buckets = 3_000, 8
	e := newBucketedEnv(t, 4, units, buckets)
	msgs := e.admit(users(1, 2_400))
	e.produceKeyed(msgs)
	parts := map[string]bool{}
	for _, m := range msgs {
		parts[string(m.Key())] = true
	}
	if len(parts) != buckets {
		t.Fatalf("%d distinct Kafka keys for %d buckets", len(parts), buckets)
	}
	cfg := e.config()
	m := orderwriter.NewMetrics(prometheus.NewRegistry())
	a, b := e.start(cfg, nil, m), e.start(cfg, nil, m)
	e.waitDrained(120 * time.Second)
	a.stop(t)
	b.stop(t)

	if got := e.count("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ? AND outcome = 'ORDERED'", e.item); got != 2_400 {
		t.Fatalf("ORDERED = %d, want 2400", got)
	}
	if got := e.count("SELECT stock FROM items WHERE id = ?", e.item); got != 0 {
		t.Errorf("items.stock of a bucketed item = %d, want 0 (its stock is in item_buckets)", got)
	}
	ctx := context.Background()
	rows, err := store.BucketRows(ctx, e.db, e.item, false)
	if err != nil || len(rows) != buckets {
		t.Fatalf("bucket rows %v, %v", rows, err)
	}
	redisStocks, err := e.st.BucketStocks(ctx, e.item, buckets)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range rows {
		live := e.count("SELECT COALESCE(SUM(qty),0) FROM orders WHERE item_id = ? AND bucket = ? AND status <> 'CANCELLED'", e.item, r.Bucket)
		if r.Stock+live != r.TotalStock {
			t.Errorf("bucket %d: MySQL stock %d + live %d != total %d", r.Bucket, r.Stock, live, r.TotalStock)
		}
		if r.Stock != redisStocks[r.Bucket] {
			t.Errorf("bucket %d: MySQL stock %d, Redis stock %d", r.Bucket, r.Stock, redisStocks[r.Bucket])
		}
		total += r.TotalStock
	}
	if total != units {
		t.Errorf("bucket totals add up to %d, want %d", total, units)
	}
	for _, u := range []int64{1, 2, 3, 500, 2_400} {
		if got := e.count("SELECT bucket FROM orders WHERE item_id = ? AND user_id = ?", e.item, u); got != int64(stock.HomeBucket(u, buckets)) {
			t.Errorf("order of user %d is of bucket %d, want its home bucket %d", u, got, stock.HomeBucket(u, buckets))
		}
	}
	e.checkInvariants()
}

// TestRequestOfARetiredBucket: a request admitted in bucket 5 of an item
// that was re-bucketed to 2 just after (the warm's window) takes its unit
// from the row that bucket 5 is attributed to now (5 MOD 2 = 1), instead of
// failing for ever on a row that no longer exists.
func TestRequestOfARetiredBucket(t *testing.T) {
	t.Parallel()
	db, _ := testenv.MySQL(t)
	ctx := context.Background()
	id := testenv.ItemID()
	now := time.Now()
	err := store.RunInTx(ctx, db, sql.LevelDefault, func(tx *sql.Tx) error {
		_, err := store.UpsertItem(ctx, tx, store.Item{ID: id, Name: "re-bucketed", PriceCents: 1, TotalStock: 10, PerUserLimit: 1,
			StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Buckets: 2})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &orderwriter.ItemWriter{DB: db, PaymentWindow: time.Hour, TxTimeout: 10 * time.Second}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	msg := orderlog.OrderMessage{V: orderlog.MessageVersion, RequestID: reqid.NewIn(id, 5, now), ItemID: id, UserID: 77, Qty: 1}
	res, err := w.WriteItem(wctx, id, []orderlog.OrderMessage{msg})
	if err != nil || len(res.Ordered) != 1 {
		t.Fatalf("write a request of retired bucket 5: %+v, %v", res, err)
	}
	rows, err := store.BucketRows(ctx, db, id, false)
	if err != nil || len(rows) != 2 || rows[0].Stock != 5 || rows[1].Stock != 4 {
		t.Fatalf("bucket rows after the order %+v, %v; want bucket 1 to have given the unit", rows, err)
	}
}
