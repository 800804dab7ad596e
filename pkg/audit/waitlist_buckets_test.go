package audit_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/rebalance"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// waitlistSale is a sold-out bucketed queued item (2 buckets of 2 units)
// built the way the pipeline builds one: catalog.Put, buyers admitted in
// their home buckets with grants, orders written by the consumer's
// ItemWriter; bucket 1's two orders left unpaid and cancelled by the
// reaper, so its two units are in bucket 1's share of the waitlist; then
// one of them moved to bucket 0's share by a waitlist transfer.
func waitlistSale(t *testing.T, ctx context.Context) *sale {
	t.Helper()
	db, _ := testenv.MySQL(t)
	st := stock.New(testenv.Redis(t))
	s := &sale{db: db, st: st, item: testenv.ItemID(), byBucket: map[int][]string{}}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := catalog.New(db, st, testenv.NoLag).Put(ctx, store.Item{ID: s.item, Name: "bucketed waitlist", PriceCents: 700,
		TotalStock: 4, PerUserLimit: 1, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: 2,
		ItemQueue: store.ItemQueue{Queue: true, QueueOpensAt: now.Add(-time.Hour), QueueRate: 100}}); err != nil {
		t.Fatal(err)
	}
	byBucket := map[int][]orderlog.OrderMessage{}
	var u int64
	for b := range 2 {
		for range 2 {
			u = testenv.UserIn(b, 2, u+1)
			rid := reqid.NewIn(s.item, b, time.Now())
			r, err := st.Admit(ctx, stock.AdmitRequest{ItemID: s.item, Buckets: 2, Bucket: b, UserID: u, Qty: 1, RequestID: rid, Now: time.Now(), Granted: true})
			if err != nil || r.Code != stock.Admitted {
				t.Fatalf("admit user %d in bucket %d: %+v %v", u, b, r, err)
			}
			byBucket[b] = append(byBucket[b], orderlog.OrderMessage{V: 1, RequestID: rid, ItemID: s.item, UserID: u, Qty: 1})
			s.byBucket[b] = append(s.byBucket[b], rid)
		}
	}
	for b, window := range []time.Duration{time.Hour, time.Millisecond} {
		w := &orderwriter.ItemWriter{DB: db, PaymentWindow: window, TxTimeout: 10 * time.Second}
		if res, err := w.WriteItem(ctx, s.item, byBucket[b]); err != nil || len(res.Ordered) != 2 {
			t.Fatalf("write bucket %d: %+v %v", b, res, err)
		}
		if err := st.Settle(ctx, s.item, s.byBucket[b]); err != nil {
			t.Fatal(err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := reap.New(reap.Config{StoreTimeout: 5 * time.Second, OrphanGrace: time.Minute}, reap.Deps{DB: db, Stock: st}, reap.NewMetrics(prometheus.NewRegistry()), quiet)
	testenv.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool {
		if err := r.Pass(ctx); err != nil {
			t.Fatalf("reaper pass: %v", err)
		}
		rep := s.audit(t, ctx)
		return rep.Waitlist != nil && rep.Waitlist.In == 2 && rep.Cancelled == 2
	}, "bucket 1's unpaid orders never reached its share of the waitlist")
	mover := rebalance.New(rebalance.Config{StoreTimeout: 5 * time.Second}, rebalance.Deps{DB: db, Redis: st.Client()}, rebalance.NewMetrics(prometheus.NewRegistry()), quiet)
	if moved, err := mover.MovePool(ctx, s.item, 2, 1, 0, 1); err != nil || moved != 1 {
		t.Fatalf("move a unit from bucket 1's pool to 0's: %d %v", moved, err)
	}
	return s
}

func (s *sale) hincr(t *testing.T, ctx context.Context, key, field string, by int64) {
	t.Helper()
	if err := s.st.Client().HIncrBy(ctx, key, field, by).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestBucketedWaitlistAudit: the audit of a bucketed item's waitlist, at
// rest: its numbers bucket by bucket; then faults planted in Redis, each
// undone before the next, each caught. A unit invented in a pool, a unit
// counted in a bucket's stock and in its pool at once (sold twice), a unit
// moved between two pools in Redis only (the item's sums cannot see it),
// a transfer's take from one pool with no give to another and no transfer
// open (a lost unit the per-bucket shares cannot see), an offer holding no
// unit.
func TestBucketedWaitlistAudit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := waitlistSale(t, ctx)
	rep := s.audit(t, ctx)
	if !rep.OK || len(rep.Info) != 0 {
		t.Fatalf("at rest: %+v", rep)
	}
	if w := *rep.Waitlist; w.In != 2 || w.Pool != 2 || w.Moved != 1 || w.Moving != 0 {
		t.Fatalf("waitlist: %+v, want 2 in, 2 in the pools, 1 moved", w)
	}
	if rep.PerBucket[0].WaitlistHeld != 1 || rep.PerBucket[1].WaitlistHeld != 1 || rep.PerBucket[0].Total != 3 || rep.PerBucket[1].Total != 1 {
		t.Fatalf("per bucket: %+v, want one unit held in each bucket's share, totals 3 and 1 (one unit moved in MySQL too)", rep.PerBucket)
	}
	k0, k1 := stock.BucketKeys(s.item, 0), stock.BucketKeys(s.item, 1)

	for _, f := range []struct {
		name          string
		plant, undo   func()
		want          []string
		itemSumsSeeIt bool
	}{
		{
			name:  "a unit invented in bucket 0's pool",
			plant: func() { s.hincr(t, ctx, k0.Waitlist, "pool", 1) },
			undo:  func() { s.hincr(t, ctx, k0.Waitlist, "pool", -1) },
			want: []string{"I3 redis conservation:", "I9 waitlist hand-off:", "I3 redis conservation in bucket 0:",
				"I9 waitlist hand-off in bucket 0:"},
			itemSumsSeeIt: true,
		},
		{
			name:          "bucket 1's pooled unit also back in its stock",
			plant:         func() { s.incr(t, ctx, 1, 1) },
			undo:          func() { s.incr(t, ctx, 1, -1) },
			want:          []string{"I3 redis conservation:", "I3 redis conservation in bucket 1:"},
			itemSumsSeeIt: true,
		},
		{
			name: "a unit moved from bucket 1's pool to 0's in Redis only",
			plant: func() {
				s.hincr(t, ctx, k1.Waitlist, "pool", -1)
				s.hincr(t, ctx, k0.Waitlist, "pool", 1)
			},
			undo: func() {
				s.hincr(t, ctx, k1.Waitlist, "pool", 1)
				s.hincr(t, ctx, k0.Waitlist, "pool", -1)
			},
			want: []string{"I3 redis conservation in bucket 0:", "I3 redis conservation in bucket 1:",
				"I9 waitlist hand-off in bucket 0:", "I9 waitlist hand-off in bucket 1:"},
		},
		{
			name: "a transfer's take from bucket 1's pool, never given, no transfer open",
			plant: func() {
				s.hincr(t, ctx, k1.Waitlist, "pool", -1)
				s.hincr(t, ctx, k1.Waitlist, "moved_out", 1)
			},
			undo: func() {
				s.hincr(t, ctx, k1.Waitlist, "pool", 1)
				s.hincr(t, ctx, k1.Waitlist, "moved_out", -1)
			},
			want:          []string{"I9 waitlist hand-off: 2 units moved out", "I3 redis conservation in bucket 1:"},
			itemSumsSeeIt: true,
		},
		{
			name:          "an offer in bucket 0 holding no unit",
			plant:         func() { s.st.Client().HSet(ctx, k0.Offers, "999", "t:1:9999999999999") },
			undo:          func() { s.st.Client().HDel(ctx, k0.Offers, "999") },
			want:          []string{"I3 redis conservation:", "I9 waitlist hand-off:", "I3 redis conservation in bucket 0:", "I9 waitlist hand-off in bucket 0:"},
			itemSumsSeeIt: true,
		},
	} {
		f.plant()
		rep := s.audit(t, ctx)
		if rep.OK {
			t.Fatalf("%s: the audit passed: %+v", f.name, rep)
		}
		if !f.itemSumsSeeIt && !onlyBuckets(rep.Violations) {
			t.Fatalf("%s: an item-level check saw it: %q", f.name, rep.Violations)
		}
		wantViolations(t, rep, f.want...)
		t.Logf("%s: %q", f.name, rep.Violations)
		f.undo()
		if rep := s.audit(t, ctx); !rep.OK {
			t.Fatalf("%s undone: %+v", f.name, rep)
		}
	}

	// The same take with its transfer open (PLANNED: its MySQL move and its
	// give still to come) is a transfer under way: no violation.
	s.hincr(t, ctx, k1.Waitlist, "pool", -1)
	s.hincr(t, ctx, k1.Waitlist, "moved_out", 1)
	s.exec(t, ctx, "INSERT INTO stock_transfers (item_id, from_bucket, to_bucket, qty, state, kind) VALUES (?, 1, 0, 1, 'PLANNED', 'WAITLIST')", s.item)
	if rep := s.audit(t, ctx); !rep.OK || len(rep.Info) != 1 || !strings.HasPrefix(rep.Info[0], "transfers open: 1 ") || rep.Waitlist.Moving != 1 {
		t.Fatalf("audit mid waitlist transfer: %+v, want OK, the transfer in info, 1 unit moving", rep)
	}
}
