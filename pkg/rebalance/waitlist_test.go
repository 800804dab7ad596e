package rebalance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/audit"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// queuedItem creates an item of total units over n buckets with a waiting
// room, its sale open, and warms it (every bucket gets total/n).
func (e *env) queuedItem(total int64, n int) int64 {
	e.t.Helper()
	return e.newItem(total, n, true)
}

// release sells out bucket b of item (n buckets, each of per units) to
// buyers of b with grants, then releases k of their reservations (their
// publish failed): with the bucket's stock gone and the sale open, the k
// units go to the bucket's share of the waitlist.
func (e *env) release(item int64, n, b int, per int64, k int) {
	e.t.Helper()
	ctx := context.Background()
	var rids []string
	for range per {
		e.user = testenv.UserIn(b, n, e.user+1)
		rid := reqid.NewIn(item, b, time.Now())
		r, err := e.st.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: n, Bucket: b, UserID: e.user, Qty: 1, RequestID: rid, Now: time.Now(), Granted: true})
		if err != nil || r.Code != stock.Admitted {
			e.t.Fatalf("admit user %d in bucket %d: %+v, %v", e.user, b, r, err)
		}
		rids = append(rids, rid)
	}
	for _, rid := range rids[:k] {
		if ok, err := e.st.Release(ctx, item, rid, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
			e.t.Fatalf("release %s: %v %v", rid, ok, err)
		}
	}
}

// shares reads item's n shares of its waitlist; each must balance (I9).
func (e *env) shares(item int64, n int) waitroom.Waitlist {
	e.t.Helper()
	w, err := waitroom.NewStore(e.st).ReadShares(context.Background(), item, n)
	if err != nil {
		e.t.Fatal(err)
	}
	for b, sh := range w.PerBucket {
		if !sh.Balanced() {
			e.t.Fatalf("I9 of bucket %d's share: %+v", b, sh)
		}
	}
	return w
}

// pools is each bucket's pool.
func pools(w waitroom.Waitlist) []int64 {
	out := make([]int64, len(w.PerBucket))
	for b, sh := range w.PerBucket {
		out[b] = sh.Pool
	}
	return out
}

// conservedWaitlist checks both stores of item (n buckets, no orders
// written): per bucket MySQL's stock is Redis' stock plus its pool plus
// its reservations, total_stock is stock, and the totals add up to total.
func (e *env) conservedWaitlist(item int64, n int, total int64) (snapshot, waitroom.Waitlist) {
	e.t.Helper()
	s, w := e.snapshot(item, n), e.shares(item, n)
	var sum int64
	for b, row := range s.mysql {
		sum += row.TotalStock
		if row.TotalStock != row.Stock {
			e.t.Errorf("bucket %d: MySQL total %d != stock %d with no orders", b, row.TotalStock, row.Stock)
		}
		if held := w.PerBucket[b].Held(); row.Stock != s.redis[b]+held+s.reserved[b] {
			e.t.Errorf("bucket %d: MySQL stock %d != Redis stock %d + waitlist %d + %d reservations", b, row.Stock, s.redis[b], held, s.reserved[b])
		}
	}
	if sum != total {
		e.t.Errorf("bucket totals add up to %d; want %d", sum, total)
	}
	if e.t.Failed() {
		e.t.FailNow()
	}
	return s, w
}

// auditOK runs the audit of item and fails on a violation; it returns the
// report's info.
func (e *env) auditOK(item int64) []string {
	e.t.Helper()
	rep, err := audit.Item(context.Background(), e.db, e.st, item)
	if err != nil {
		e.t.Fatal(err)
	}
	if !rep.OK {
		e.t.Fatalf("audit of item %d: %v", item, rep.Violations)
	}
	return rep.Info
}

// TestWaitlistTransferMovesOnce: MovePool moves units of a bucketed item's
// waitlist from one bucket's pool to another's in both stores once: Redis'
// pools (not the stocks, not the want flag), MySQL's rows (stock and total),
// each share counting what moved, the transfer DONE and of kind WAITLIST. A
// move the donor's pool no longer covers is abandoned and moves nothing;
// driving the DONE transfer again, or any of its steps, changes nothing.
func TestWaitlistTransferMovesOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.queuedItem(40, 4)
	e.release(item, 4, 1, 10, 3) // bucket 1 sold out, 3 of its units in its pool
	s, w := e.conservedWaitlist(item, 4, 40)
	if !slices.Equal(pools(w), []int64{0, 3, 0, 0}) || !slices.Equal(s.redis, []int64{10, 0, 10, 10}) {
		t.Fatalf("before: pools %v, stocks %v", pools(w), s.redis)
	}

	moved, err := e.r.MovePool(ctx, item, 4, 1, 2, 2)
	if err != nil || moved != 2 {
		t.Fatalf("move 2 from bucket 1's pool to 2's: %d %v", moved, err)
	}
	s, w = e.conservedWaitlist(item, 4, 40)
	if !slices.Equal(pools(w), []int64{0, 1, 2, 0}) || !slices.Equal(s.redis, []int64{10, 0, 10, 10}) {
		t.Fatalf("after the move: pools %v, stocks %v; want pools [0 1 2 0], stocks untouched", pools(w), s.redis)
	}
	if s.mysql[1].TotalStock != 8 || s.mysql[2].TotalStock != 12 {
		t.Fatalf("MySQL after the move: %+v; want totals 8 and 12 in buckets 1 and 2", s.mysql)
	}
	if w.PerBucket[1].MovedOut != 2 || w.PerBucket[2].MovedIn != 2 || w.Moving() != 0 {
		t.Fatalf("shares after the move: %+v", w)
	}
	if st := e.settled(item); st[store.TransferDone] != 1 || len(st) != 1 {
		t.Fatalf("transfers = %v; want one DONE", st)
	}
	ts, err := store.QueryTransfers(ctx, e.db, "item_id = ?", item)
	if err != nil || len(ts) != 1 || ts[0].Kind != store.TransferWaitlist {
		t.Fatalf("transfers %+v %v; want one of kind WAITLIST", ts, err)
	}
	e.auditOK(item)

	// Only one unit left in bucket 1's pool: a move of 2 is abandoned.
	if moved, err := e.r.MovePool(ctx, item, 4, 1, 3, 2); err != nil || moved != 0 {
		t.Fatalf("move 2 of a pool of 1: %d %v; want 0", moved, err)
	}
	if _, w = e.conservedWaitlist(item, 4, 40); !slices.Equal(pools(w), []int64{0, 1, 2, 0}) {
		t.Fatalf("after the abandoned move: pools %v", pools(w))
	}
	if st := e.settled(item); st[store.TransferDone] != 1 || st[store.TransferAbandoned] != 1 {
		t.Fatalf("transfers = %v; want one DONE, one ABANDONED", st)
	}

	// The DONE transfer again, whole and step by step: nothing moves.
	if _, err := e.r.drive(ctx, ts[0]); err != nil {
		t.Fatal(err)
	}
	ref := refOf(ts[0])
	if out, err := transferOut(ctx, e.rdb, ref); err != nil || out != stepOK {
		t.Fatalf("out step again: %q %v; want its first answer, ok", out, err)
	}
	if in, err := transferIn(ctx, e.rdb, ref); err != nil || in != stepSeen {
		t.Fatalf("in step again: %q %v; want seen", in, err)
	}
	if mv, err := moveTransfer(ctx, e.db, ts[0], func(context.Context, int64, bool) (int64, error) { return ts[0].Qty, nil }); err != nil || mv.won {
		t.Fatalf("MySQL step again: %+v %v; want lost", mv, err)
	}
	if _, w = e.conservedWaitlist(item, 4, 40); !slices.Equal(pools(w), []int64{0, 1, 2, 0}) || w.PerBucket[2].MovedIn != 2 {
		t.Fatalf("after the repeats: %+v", w)
	}
	e.auditOK(item)
}

// TestWaitlistTransferHalvesTwice: a waitlist transfer stopped between its
// halves, its Redis take from the donor's pool done and its MySQL move and
// Redis give not yet, holds its units in neither pool: each share still
// balances (what left counted moved out), the item's waitlist shows them
// moving, and the audit waits for the transfer instead of calling it a
// violation. Every half run twice changes each store once; driven to its
// end the transfer leaves both stores as one move would.
func TestWaitlistTransferHalvesTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.queuedItem(20, 2)
	e.release(item, 2, 0, 10, 2)
	tr, err := planTransfer(ctx, e.db, store.TransferWaitlist, item, 2, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := markLive(ctx, e.rdb, item, tr.ID); err != nil {
		t.Fatal(err)
	}
	ref := refOf(tr)
	for i := range 2 {
		if out, err := transferOut(ctx, e.rdb, ref); err != nil || out != stepOK {
			t.Fatalf("out step, run %d: %q %v", i+1, out, err)
		}
	}
	w := e.shares(item, 2)
	if !slices.Equal(pools(w), []int64{0, 0}) || w.Moving() != 2 || w.PerBucket[0].MovedOut != 2 {
		t.Fatalf("between the halves: %+v; want the 2 units moving, in neither pool", w)
	}
	if info := e.auditOK(item); len(info) == 0 {
		t.Fatal("the audit of a transfer under way says nothing of it")
	}
	for i := range 2 {
		mv, err := moveTransfer(ctx, e.db, tr, func(ctx context.Context, free int64, short bool) (int64, error) {
			c, err := transferCutTo(ctx, e.rdb, ref, free, short)
			return c.moved, err
		})
		if err != nil || mv.won != (i == 0) {
			t.Fatalf("MySQL step, run %d: %+v %v; want won only the first time", i+1, mv, err)
		}
	}
	for i, want := range []step{stepOK, stepSeen} {
		if in, err := transferIn(ctx, e.rdb, ref); err != nil || in != want {
			t.Fatalf("in step, run %d: %q %v; want %q", i+1, in, err, want)
		}
	}
	tr.State = store.TransferMoved
	if d, err := e.r.drive(ctx, tr); err != nil || d.state != store.TransferDone {
		t.Fatalf("drive to the end: %+v %v", d, err)
	}
	s, w := e.conservedWaitlist(item, 2, 20)
	if !slices.Equal(pools(w), []int64{0, 2}) || w.Moving() != 0 || s.mysql[0].TotalStock != 8 || s.mysql[1].TotalStock != 12 {
		t.Fatalf("after: pools %v, MySQL %+v; want pools [0 2], totals 8 and 12", pools(w), s.mysql)
	}
	e.settled(item)
	if info := e.auditOK(item); len(info) != 0 {
		t.Fatalf("audit info at rest: %v", info)
	}
}

// TestCrashMidWaitlistTransfer: the process moving a waitlist's units is
// SIGKILLed between its writes, after the Redis take from the donor's pool
// or after the MySQL move. The units are then in no pool, counted moving;
// the gate's ResumePool (after "out") or a rebalancer's pass (after
// "moved"), in another process, finishes the transfer once: each unit in
// exactly one pool, MySQL's rows moved once, nothing invented or lost.
func TestCrashMidWaitlistTransfer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		killAfter string
		state     store.TransferState
		mysql     []int64 // MySQL totals of buckets 0 and 1 as the crash leaves them
	}{
		{"out", store.TransferPlanned, []int64{10, 10}},
		{"moved", store.TransferMoved, []int64{7, 13}},
	} {
		t.Run("after "+tc.killAfter, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			item := e.queuedItem(40, 4)
			e.release(item, 4, 0, 10, 3)

			e.runMoverSpec(childSpec{KillAfter: tc.killAfter, Pool: &poolSpec{Item: item, Buckets: 4, From: 0, To: 1, Qty: 3}})

			open, err := openTransfers(ctx, e.db, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(open) != 1 || open[0].State != tc.state || open[0].Kind != store.TransferWaitlist || open[0].Qty != 3 {
				t.Fatalf("after the crash, open transfers = %+v; want one WAITLIST %s 0->1 qty 3", open, tc.state)
			}
			s := e.snapshot(item, 4)
			if got := []int64{s.mysql[0].TotalStock, s.mysql[1].TotalStock}; !slices.Equal(got, tc.mysql) {
				t.Fatalf("after the crash, MySQL totals of buckets 0, 1 = %v; want %v", got, tc.mysql)
			}
			if w := e.shares(item, 4); !slices.Equal(pools(w), []int64{0, 0, 0, 0}) || w.Moving() != 3 {
				t.Fatalf("after the crash: %+v; want the 3 units moving, in no pool", w)
			}
			e.auditOK(item)

			for range 2 { // the repair, then one that must find nothing to repair
				if tc.killAfter == "out" {
					err = e.r.ResumePool(ctx, item)
				} else {
					err = e.r.Pass(ctx)
				}
				if err != nil {
					t.Fatalf("repair: %v", err)
				}
			}
			s, w := e.conservedWaitlist(item, 4, 40)
			if !slices.Equal(pools(w), []int64{0, 3, 0, 0}) || w.Moving() != 0 || s.mysql[0].TotalStock != 7 || s.mysql[1].TotalStock != 13 {
				t.Fatalf("after the repair: pools %v, MySQL %+v; want pools [0 3 0 0], totals 7 and 13", pools(w), s.mysql)
			}
			if !slices.Equal(s.redis, []int64{0, 10, 10, 10}) {
				t.Fatalf("stocks after the repair = %v; want [0 10 10 10]: a waitlist transfer leaves the stocks alone", s.redis)
			}
			if st := e.settled(item); st[store.TransferDone] != 1 || len(st) != 1 {
				t.Fatalf("transfers after the repair = %v; want exactly one, DONE", st)
			}
			if v := e.metric("flashsale_bucket_transfers_total", "result", "resumed"); v != 1 {
				t.Fatalf("resumed transfers = %v; want 1", v)
			}
			if info := e.auditOK(item); len(info) != 0 {
				t.Fatalf("audit info at rest: %v", info)
			}
		})
	}
}
