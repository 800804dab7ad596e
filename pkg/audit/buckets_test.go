package audit_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// sale is a bucketed item built the way the pipeline builds one: catalog.Put
// with 4 buckets of 5 units, buyers admitted in their home buckets by
// admit.lua, orders written by the consumer's ItemWriter. byBucket[b] are
// the request ids admitted in bucket b.
type sale struct {
	db       *sql.DB
	st       *stock.Store
	item     int64
	byBucket map[int][]string
}

const saleBuckets = 4

func newSale(t *testing.T, ctx context.Context) *sale {
	t.Helper()
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	s := &sale{db: db, st: st, item: testenv.ItemID(), byBucket: map[int][]string{}}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := catalog.New(db, st, testenv.NoLag).Put(ctx, store.Item{ID: s.item, Name: "bucket audit", PriceCents: 700,
		TotalStock: 20, PerUserLimit: 2, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: saleBuckets}); err != nil {
		t.Fatal(err)
	}
	return s
}

// admit admits userID for qty in their home bucket and returns the message
// the ingress would publish.
func (s *sale) admit(t *testing.T, ctx context.Context, userID int64, qty int) orderlog.OrderMessage {
	t.Helper()
	b := stock.HomeBucket(userID, saleBuckets)
	rid := reqid.NewIn(s.item, b, time.Now())
	r, err := s.st.Admit(ctx, stock.AdmitRequest{ItemID: s.item, Buckets: saleBuckets, Bucket: b, UserID: userID, Qty: qty, RequestID: rid, Now: time.Now()})
	if err != nil || r.Code != stock.Admitted {
		t.Fatalf("admit user %d in bucket %d: %+v %v", userID, b, r, err)
	}
	s.byBucket[b] = append(s.byBucket[b], rid)
	return orderlog.OrderMessage{V: 1, RequestID: rid, ItemID: s.item, UserID: userID, Qty: qty}
}

// userIn returns the first user id from `from` on whose home bucket is b.
func userIn(b int, from int64) int64 {
	return testenv.UserIn(b, saleBuckets, from)
}

func (s *sale) audit(t *testing.T, ctx context.Context) audit.Report {
	t.Helper()
	rep, err := audit.Item(ctx, s.db, s.st, s.item)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func (s *sale) exec(t *testing.T, ctx context.Context, q string, args ...any) {
	t.Helper()
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		t.Fatal(err)
	}
}

func (s *sale) incr(t *testing.T, ctx context.Context, bucket int, by int64) {
	t.Helper()
	if err := s.st.Client().IncrBy(ctx, stock.BucketKeys(s.item, bucket).Stock, by).Err(); err != nil {
		t.Fatal(err)
	}
}

// running builds a busy sale: in every state an order of a bucketed item
// can be in at once, per bucket. Bucket 0: an order written and settled.
// Bucket 1: two buyers, ordered in MySQL, reservations not yet settled in
// Redis. Bucket 2: an order cancelled by the reaper's MySQL step, its qty
// not yet back in Redis. Bucket 3: a reservation the consumer has not
// written yet.
func running(t *testing.T, ctx context.Context) *sale {
	t.Helper()
	s := newSale(t, ctx)
	w := &orderwriter.ItemWriter{DB: s.db, PaymentWindow: time.Hour, TxTimeout: 10 * time.Second}
	write := func(w *orderwriter.ItemWriter, msgs ...orderlog.OrderMessage) {
		t.Helper()
		if res, err := w.WriteItem(ctx, s.item, msgs); err != nil || len(res.Ordered) != len(msgs) {
			t.Fatalf("write %d requests: %+v %v", len(msgs), res, err)
		}
	}
	u0 := userIn(0, 1)
	write(w, s.admit(t, ctx, u0, 1))
	if err := s.st.Settle(ctx, s.item, s.byBucket[0]); err != nil {
		t.Fatal(err)
	}
	u1 := userIn(1, 1)
	write(w, s.admit(t, ctx, u1, 2), s.admit(t, ctx, userIn(1, u1+1), 1))
	expiring := &orderwriter.ItemWriter{DB: s.db, PaymentWindow: time.Millisecond, TxTimeout: 10 * time.Second}
	write(expiring, s.admit(t, ctx, userIn(2, 1), 2))
	if err := s.st.Settle(ctx, s.item, s.byBucket[2]); err != nil {
		t.Fatal(err)
	}
	// Its window of a millisecond ends by MySQL's clock: cancel it once
	// the server sees it expired.
	var got []store.Order
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
		var err error
		if got, err = store.CancelExpired(ctx, s.db, 10); err != nil {
			t.Fatalf("cancel the expired order of bucket 2: %v", err)
		}
		return len(got) > 0
	}, "the order with a 1 ms payment window never expired")
	if len(got) != 1 || got[0].Bucket != 2 {
		t.Fatalf("cancel the expired order of bucket 2: %+v", got)
	}
	s.admit(t, ctx, userIn(3, 1), 1)
	return s
}

// TestBucketAuditCatchesWhatTheItemCannot: a busy bucketed sale passes;
// units moved from one bucket to another in one store only keep every item
// sum, and only the per-bucket checks see them.
func TestBucketAuditCatchesWhatTheItemCannot(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := running(t, ctx)
	if rep := s.audit(t, ctx); !rep.OK {
		t.Fatalf("busy bucketed sale: %+v", rep)
	}

	// MySQL: a unit of bucket 3 (untouched, 5 of 5) shows up in bucket 1
	// (2 of 5 left). Stock, total and every order stay as they were.
	s.exec(t, ctx, "UPDATE item_buckets SET stock = stock + IF(bucket = 1, 1, -1) WHERE item_id = ? AND bucket IN (1, 3)", s.item)
	rep := s.audit(t, ctx)
	if rep.OK || !onlyBuckets(rep.Violations) {
		t.Fatalf("a unit moved between buckets in MySQL only: %+v", rep)
	}
	wantViolations(t, rep, "I3 mysql conservation in bucket 1:", "I3 mysql conservation in bucket 3:")
	s.exec(t, ctx, "UPDATE item_buckets SET stock = stock - IF(bucket = 1, 1, -1) WHERE item_id = ? AND bucket IN (1, 3)", s.item)

	// Redis: the same move in Redis only.
	s.incr(t, ctx, 1, 1)
	s.incr(t, ctx, 3, -1)
	rep = s.audit(t, ctx)
	if rep.OK || !onlyBuckets(rep.Violations) {
		t.Fatalf("a unit moved between buckets in Redis only: %+v", rep)
	}
	wantViolations(t, rep, "I3 redis conservation in bucket 1:", "I3 redis conservation in bucket 3:")

	// I7: bucket 0 (4 left in Redis) goes negative, bucket 3 takes the
	// difference: the item's Redis stock is still the right sum.
	s.incr(t, ctx, 0, -5)
	s.incr(t, ctx, 3, 5)
	rep = s.audit(t, ctx)
	if rep.OK || !onlyBuckets(rep.Violations) || !has(rep.Violations, "I7 negative stock in bucket 0:") {
		t.Fatalf("a negative bucket inside a right sum: %+v", rep)
	}
}

// onlyBuckets reports whether every violation is a per-bucket one: the
// item-level checks see nothing wrong.
func onlyBuckets(vs []string) bool {
	for _, v := range vs {
		if !strings.Contains(v, "bucket") {
			return false
		}
	}
	return len(vs) > 0
}

func has(vs []string, prefix string) bool {
	for _, v := range vs {
		if strings.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}

func wantViolations(t *testing.T, rep audit.Report, prefixes ...string) {
	t.Helper()
	if len(rep.Violations) != len(prefixes) {
		t.Fatalf("violations %q, want one per %q", rep.Violations, prefixes)
	}
	for _, p := range prefixes {
		if !has(rep.Violations, p) {
			t.Fatalf("violations %q, want %q", rep.Violations, p)
		}
	}
}

// TestBucketAuditNumbers: the per-bucket section of a busy sale, bucket by
// bucket, adds up to the item's numbers.
func TestBucketAuditNumbers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := running(t, ctx)
	rep := s.audit(t, ctx)
	want := []audit.BucketReport{
		{Bucket: 0, Total: 5, DBStock: 4, RedisStock: 4, Unpaid: 1},
		{Bucket: 1, Total: 5, DBStock: 2, RedisStock: 2, Pending: 2, PendingQty: 3, Unpaid: 3},
		{Bucket: 2, Total: 5, DBStock: 5, RedisStock: 3, Cancelled: 2},
		{Bucket: 3, Total: 5, DBStock: 5, RedisStock: 4, Pending: 1, PendingQty: 1},
	}
	if !rep.OK || rep.Buckets != saleBuckets || len(rep.PerBucket) != len(want) {
		t.Fatalf("report: %+v", rep)
	}
	for b, w := range want {
		if rep.PerBucket[b] != w {
			t.Errorf("bucket %d: %+v, want %+v", b, rep.PerBucket[b], w)
		}
	}
}

// TestBucketAuditWaitsForTransfers: while a transfer between buckets is
// open (a stock_transfers row PLANNED or MOVED) or under way in Redis (its
// id in TransfersLive), units may sit in one store's donor and the other's
// recipient: the per-bucket Redis check is not made, and the report says
// why instead of reporting a violation. The MySQL checks still hold and
// are still made.
func TestBucketAuditWaitsForTransfers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := running(t, ctx)
	// As if a transfer of 1 unit from bucket 3 to bucket 1 had run its
	// Redis steps only.
	s.incr(t, ctx, 3, -1)
	s.incr(t, ctx, 1, 1)

	s.exec(t, ctx, "INSERT INTO stock_transfers (item_id, from_bucket, to_bucket, qty, state) VALUES (?, 3, 1, 1, 'MOVED')", s.item)
	rep := s.audit(t, ctx)
	if !rep.OK || len(rep.Info) != 1 || !strings.HasPrefix(rep.Info[0], "transfers open: 1 ") {
		t.Fatalf("audit with a transfer open: %+v", rep)
	}
	s.exec(t, ctx, "UPDATE item_buckets SET stock = stock + 1 WHERE item_id = ? AND bucket = 1", s.item)
	if rep := s.audit(t, ctx); rep.OK || !has(rep.Violations, "I3 mysql conservation in bucket 1:") {
		t.Fatalf("MySQL drift in a bucket while a transfer is open: %+v", rep)
	}
	s.exec(t, ctx, "UPDATE item_buckets SET stock = stock - 1 WHERE item_id = ? AND bucket = 1", s.item)
	s.exec(t, ctx, "UPDATE stock_transfers SET state = 'DONE' WHERE item_id = ?", s.item)

	live := stock.KeysOf(s.item).TransfersLive()
	if err := s.st.Client().SAdd(ctx, live, "99").Err(); err != nil {
		t.Fatal(err)
	}
	rep = s.audit(t, ctx)
	if !rep.OK || len(rep.Info) != 1 || !strings.HasPrefix(rep.Info[0], "transfers ran during the audit") {
		t.Fatalf("audit with a transfer live in Redis: %+v", rep)
	}
	if err := s.st.Client().Del(ctx, live).Err(); err != nil {
		t.Fatal(err)
	}
	rep = s.audit(t, ctx)
	if rep.OK || len(rep.Info) != 0 {
		t.Fatalf("no transfer open or live, a unit in the wrong Redis bucket: %+v", rep)
	}
	wantViolations(t, rep, "I3 redis conservation in bucket 1:", "I3 redis conservation in bucket 3:")
}

// TestBucketAuditLayout: the rows of a bucketed item must be its stock: one
// per bucket, totals adding up to the item's, items.stock 0. An unbucketed
// item has no rows and no per-bucket section.
func TestBucketAuditLayout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := running(t, ctx)

	s.exec(t, ctx, "UPDATE item_buckets SET total_stock = total_stock + 1, stock = stock + 1 WHERE item_id = ? AND bucket = 2", s.item)
	rep := s.audit(t, ctx)
	if rep.OK || !has(rep.Violations, "I3 mysql buckets: bucket totals add up to 21 != item total 20") {
		t.Fatalf("a bucket total beyond the item's: %+v", rep)
	}
	s.exec(t, ctx, "UPDATE item_buckets SET total_stock = total_stock - 1, stock = stock - 1 WHERE item_id = ? AND bucket = 2", s.item)

	s.exec(t, ctx, "UPDATE items SET stock = 1 WHERE id = ?", s.item)
	if rep := s.audit(t, ctx); rep.OK || !has(rep.Violations, "I3 mysql buckets: items.stock 1 of a bucketed item") {
		t.Fatalf("items.stock of a bucketed item: %+v", rep)
	}
	s.exec(t, ctx, "UPDATE items SET stock = 0 WHERE id = ?", s.item)

	s.exec(t, ctx, "DELETE FROM item_buckets WHERE item_id = ? AND bucket = 3", s.item)
	if rep := s.audit(t, ctx); rep.OK || !has(rep.Violations, "I3 mysql buckets: item_buckets rows of buckets [0 1 2], want one per bucket 0 to 3") {
		t.Fatalf("a bucket without its row: %+v", rep)
	}

	// Unbucketed: the item is its one bucket.
	plain := testenv.ItemID()
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := catalog.New(s.db, s.st, testenv.NoLag).Put(ctx, store.Item{ID: plain, Name: "plain", PriceCents: 100,
		TotalStock: 3, PerUserLimit: 1, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Item(ctx, s.db, s.st, plain)
	if err != nil || !rep.OK || rep.Buckets != 1 || rep.PerBucket != nil || rep.Info != nil {
		t.Fatalf("unbucketed item: %+v %v", rep, err)
	}
	s.exec(t, ctx, "INSERT INTO item_buckets (item_id, bucket, total_stock, stock) VALUES (?, 0, 0, 0)", plain)
	if rep, err := audit.Item(ctx, s.db, s.st, plain); err != nil || rep.OK || !has(rep.Violations, "I3 mysql buckets: 1 item_buckets rows of an unbucketed item") {
		t.Fatalf("unbucketed item with a bucket row: %+v %v", rep, err)
	}
}

// TestBucketAuditMidTransferIsNoViolation: a transfer that has taken its
// unit out of the donor in Redis but not yet given it to the recipient
// leaves the item's Redis stock one short. That is a transfer under way,
// not drift: the item-level Redis check waits for it as the per-bucket one
// does (it reported a false I3 violation).
func TestBucketAuditMidTransferIsNoViolation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := running(t, ctx)
	s.incr(t, ctx, 3, -1) // out of the donor; not yet into the recipient
	s.exec(t, ctx, "INSERT INTO stock_transfers (item_id, from_bucket, to_bucket, qty, state) VALUES (?, 3, 1, 1, 'PLANNED')", s.item)
	if rep := s.audit(t, ctx); !rep.OK || len(rep.Info) != 1 || !strings.HasPrefix(rep.Info[0], "transfers open: 1 ") {
		t.Fatalf("audit mid-transfer: %+v, want OK with the open transfer in info", rep)
	}
	s.exec(t, ctx, "UPDATE stock_transfers SET state = 'ABANDONED' WHERE item_id = ?", s.item)
	rep := s.audit(t, ctx)
	if rep.OK {
		t.Fatalf("the unit gone from Redis with no transfer open: %+v, want an I3 redis violation", rep)
	}
	wantViolations(t, rep, "I3 redis conservation:", "I3 redis conservation in bucket 3:")
}
