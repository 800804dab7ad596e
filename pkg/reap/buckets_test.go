package reap_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestBucketedPaymentWindow: 24 buyers of an item of 4 buckets (10 units
// each) order, two replicas of the reaper cancel the orders nobody paid,
// and every cancelled unit comes back to its own bucket exactly once, in
// MySQL's bucket row and in the bucket's Redis stock; a paid order keeps its
// unit; the restore records name the bucket; more passes change nothing.
func TestBucketedPaymentWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := testCtx(t, 2*time.Minute)
	const buckets, units = 4, 40
	id := testenv.ItemID()
	now := time.Now()
	it := store.Item{ID: id, Name: "bucketed", PriceCents: 100, TotalStock: units, PerUserLimit: 1,
		StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), Buckets: buckets}
	err := store.RunInTx(ctx, e.db, sql.LevelDefault, func(tx *sql.Tx) error {
		_, err := store.UpsertItem(ctx, tx, it)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Warm(ctx, stock.Snapshot{ItemID: id, BucketStock: []int64{10, 10, 10, 10}, StartsAt: it.StartsAt, EndsAt: it.EndsAt, PerUserLimit: 1}); err != nil {
		t.Fatal(err)
	}

	// Admit and write 24 orders (6 per bucket on average) with a payment
	// window that is over at once.
	byBucket := map[int][]orderlog.OrderMessage{}
	for u := int64(1); u <= 24; u++ {
		b := stock.HomeBucket(u, buckets)
		rid := reqid.NewIn(id, b, time.Now())
		res, err := e.st.Admit(ctx, stock.AdmitRequest{ItemID: id, Buckets: buckets, Bucket: b, UserID: u, Qty: 1, RequestID: rid, Now: time.Now()})
		if err != nil || res.Code != stock.Admitted {
			t.Fatalf("admit %d: %+v %v", u, res, err)
		}
		byBucket[b] = append(byBucket[b], orderlog.OrderMessage{V: orderlog.MessageVersion, RequestID: rid, ItemID: id, UserID: u, Qty: 1})
	}
	w := &orderwriter.ItemWriter{DB: e.db, PaymentWindow: time.Millisecond, TxTimeout: 30 * time.Second}
	sold := map[int]int64{}
	var paidRID string
	for b, msgs := range byBucket {
		res, err := w.WriteItem(ctx, id, msgs)
		if err != nil || len(res.Ordered) != len(msgs) {
			t.Fatalf("write bucket %d: %d ordered, %v", b, len(res.Ordered), err)
		}
		var rids []string
		for _, o := range res.Ordered {
			rids = append(rids, o.RequestID)
		}
		if err := e.st.Settle(ctx, id, rids); err != nil {
			t.Fatal(err)
		}
		sold[b] = int64(len(msgs))
		if paidRID == "" {
			paidRID = msgs[0].RequestID
		}
	}
	// One order is paid before its window is over (the window is judged
	// by the database clock, so pay it by hand inside the window).
	if _, err := e.db.ExecContext(ctx, "UPDATE orders SET status = 'PAID', paid_at = NOW(3) WHERE request_id = ?", paidRID); err != nil {
		t.Fatal(err)
	}
	paidBucket := reqid.Bucket(paidRID)

	r1, _ := e.newReaper(reap.Config{})
	r2, _ := e.newReaper(reap.Config{})
	runUntil(t, time.Minute, func() bool {
		return e.count("SELECT COUNT(*) FROM stock_restores WHERE item_id = ? AND redis_applied_at IS NOT NULL", id) == 23
	}, r1, r2)
	runUntil(t, 5*time.Second, func() bool { return true }, r1) // one more pass: must change nothing

	rows, err := store.BucketRows(ctx, e.db, id, false)
	if err != nil {
		t.Fatal(err)
	}
	redis, err := e.st.BucketStocks(ctx, id, buckets)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		want := int64(10)
		if r.Bucket == paidBucket {
			want = 9 // the paid order keeps its unit
		}
		if r.Stock != want || redis[r.Bucket] != want || r.TotalStock != 10 {
			t.Errorf("bucket %d (sold %d): MySQL stock %d of total %d, Redis %d; want %d in both, total 10",
				r.Bucket, sold[r.Bucket], r.Stock, r.TotalStock, redis[r.Bucket], want)
		}
		if n := e.count("SELECT COUNT(*) FROM stock_restores s JOIN orders o ON o.id = s.order_id WHERE s.item_id = ? AND s.bucket = ? AND o.bucket = ?", id, r.Bucket, r.Bucket); n != sold[r.Bucket]-boolInt(r.Bucket == paidBucket) {
			t.Errorf("bucket %d: %d restore records naming it, want %d", r.Bucket, n, sold[r.Bucket]-boolInt(r.Bucket == paidBucket))
		}
	}
	if got := e.count("SELECT stock FROM items WHERE id = ?", id); got != 0 {
		t.Errorf("items.stock = %d, want 0", got)
	}
	e.auditOK(id)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
