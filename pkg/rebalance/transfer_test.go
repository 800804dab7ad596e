package rebalance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// One transfer moves its units once in each store, stock and total
// together, however often it is driven.
func TestTransferExactlyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.item(40, 4)
	e.admit(item, 4, 0, 3) // bucket 0: MySQL 10, Redis 7, 3 pending

	tr, err := PlanTransfer(ctx, e.db, item, 4, 0, 2, 6)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		d, err := e.r.drive(ctx, tr)
		if err != nil || d.state != store.TransferDone || d.won != (i == 0) {
			t.Fatalf("drive #%d = %+v, %v; want DONE, won only the first time", i+1, d, err)
		}
	}
	s := e.conserved(item, 4, 40)
	if got := []int64{s.mysql[0].Stock, s.mysql[2].Stock, s.mysql[2].TotalStock, s.redis[0], s.redis[2]}; !slices.Equal(got, []int64{4, 16, 16, 1, 16}) {
		t.Fatalf("MySQL 0, 2, total 2, Redis 0, 2 = %v; want [4 16 16 1 16]", got)
	}
	if st := e.settled(item); st[store.TransferDone] != 1 {
		t.Fatalf("transfers = %v", st)
	}
	k := stock.KeysOf(item)
	if ttl := e.rdb.PTTL(ctx, k.TransferGuard(tr.ID, "out")).Val(); ttl <= 0 {
		t.Fatalf("out guard of a finished transfer has TTL %v; want one", ttl)
	}
	if d, _ := e.rdb.Get(ctx, k.TransfersDone()).Int(); d < 1 {
		t.Fatalf("TransfersDone = %d", d)
	}
}

// Two drivers of each transfer at once (two replicas resuming the same
// row): every transfer moves once, the sums hold.
func TestTransferDrivenConcurrently(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.rebalancer(Config{})
	ctx := context.Background()
	const n, total = 4, 200
	item := e.item(total, n)
	want := []int64{50, 50, 50, 50}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		from, to := rng.IntN(n), rng.IntN(n-1)
		if to >= from {
			to++
		}
		qty := int64(1 + rng.IntN(5))
		tr, err := PlanTransfer(ctx, e.db, item, n, from, to, qty)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		res := make([]driven, 2)
		errs := make([]error, 2)
		for j, r := range []*Rebalancer{e.r, other} {
			wg.Go(func() { res[j], errs[j] = r.drive(ctx, tr) })
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("transfer %d: drives failed: %v, %v", i, errs[0], errs[1])
		}
		if res[0].state != res[1].state || res[0].won == res[1].won {
			t.Fatalf("transfer %d (%d->%d qty %d, donor %d): drives = %+v, %+v; want one final state, won by exactly one",
				i, from, to, qty, want[from], res[0], res[1])
		}
		if want[from] >= qty {
			if res[0].state != store.TransferDone {
				t.Fatalf("transfer %d: %s; want DONE (donor had %d)", i, res[0].state, want[from])
			}
			want[from] -= qty
			want[to] += qty
		} else if res[0].state != store.TransferAbandoned {
			t.Fatalf("transfer %d: %s; want ABANDONED (donor had %d < %d)", i, res[0].state, want[from], qty)
		}
	}
	s := e.conserved(item, n, total)
	if !slices.Equal(s.redis, want) {
		t.Fatalf("Redis stocks = %v; want %v", s.redis, want)
	}
	e.settled(item)
}

// A donor short in Redis (its units are reserved, not yet in MySQL)
// abandons the transfer: nothing moves anywhere. A donor whose stock key is
// gone does the same.
func TestTransferAbandoned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.item(30, 3)
	e.admit(item, 3, 1, 8) // bucket 1: MySQL 10, Redis 2
	tr, err := PlanTransfer(ctx, e.db, item, 3, 1, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.r.drive(ctx, tr); err != nil || d.state != store.TransferAbandoned || !d.won {
		t.Fatalf("drive = %+v, %v; want ABANDONED", d, err)
	}
	s := e.conserved(item, 3, 30)
	if !slices.Equal(s.redis, []int64{10, 2, 10}) {
		t.Fatalf("Redis = %v after an abandoned transfer", s.redis)
	}

	if err := e.rdb.Del(ctx, stock.BucketKeys(item, 2).Stock).Err(); err != nil {
		t.Fatal(err)
	}
	gone, err := PlanTransfer(ctx, e.db, item, 3, 2, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.r.drive(ctx, gone); err != nil || d.state != store.TransferAbandoned {
		t.Fatalf("drive from a lost bucket = %+v, %v; want ABANDONED", d, err)
	}
	if rows, _ := store.BucketRows(ctx, e.db, item, false); rows[2].Stock != 10 || rows[0].Stock != 10 {
		t.Fatalf("MySQL rows changed by an abandoned transfer: %+v", rows)
	}
	if st := e.settled(item); st[store.TransferAbandoned] != 2 {
		t.Fatalf("transfers = %v", st)
	}
}

// A recipient whose stock key is gone: MySQL keeps the moved units (a warm
// copies them), the transfer is DONE, nothing is given after the warm.
func TestTransferInToLostBucket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.item(20, 2)
	if err := e.rdb.Del(ctx, stock.BucketKeys(item, 1).Stock).Err(); err != nil {
		t.Fatal(err)
	}
	tr, err := PlanTransfer(ctx, e.db, item, 2, 0, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.r.drive(ctx, tr); err != nil || d.state != store.TransferDone {
		t.Fatalf("drive = %+v, %v; want DONE", d, err)
	}
	if rows, _ := store.BucketRows(ctx, e.db, item, false); rows[0].Stock != 6 || rows[1].Stock != 14 || rows[1].TotalStock != 14 {
		t.Fatalf("MySQL rows = %+v; want 6 and 14", rows)
	}
	if st, _ := e.st.BucketStocks(ctx, item, 2); st[0] != 6 || st[1] != -1 {
		t.Fatalf("Redis = %v; want [6 -1]", st)
	}
	e.settled(item)
}

// A pass finds the want flag, plans a move from the fullest bucket, drives
// it to DONE and clears the flag; a live id whose transfer is final (its
// mover died before the SREM) or unknown is swept.
func TestPassRefillsWantingBucket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.item(40, 4)
	e.admit(item, 4, 3, 10)
	e.admit(item, 4, 1, 2)
	e.setWant(item, 3)
	old, err := PlanTransfer(ctx, e.db, item, 4, 1, 2, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := abandonTransfer(ctx, e.db, old.ID); err != nil {
		t.Fatal(err)
	}
	if err := markLive(ctx, e.rdb, item, old.ID); err != nil {
		t.Fatal(err)
	}
	if err := markLive(ctx, e.rdb, item, old.ID+1000); err != nil {
		t.Fatal(err)
	}

	if err := e.r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	s := e.conserved(item, 4, 40)
	if !slices.Equal(s.redis, []int64{5, 8, 10, 5}) {
		t.Fatalf("Redis after the pass = %v; want [5 8 10 5] (5 from bucket 0 to 3)", s.redis)
	}
	if e.rdb.Exists(ctx, stock.BucketKeys(item, 3).Want).Val() != 0 {
		t.Fatal("want flag of the refilled bucket still set")
	}
	if st := e.settled(item); st[store.TransferDone] != 1 || st[store.TransferAbandoned] != 1 {
		t.Fatalf("transfers = %v", st)
	}
	if v := e.metric("flashsale_bucket_transfers_total", "result", "done"); v != 1 {
		t.Fatalf("done transfers = %v", v)
	}
	if v := e.metric("flashsale_bucket_transfer_units_total"); v != 5 {
		t.Fatalf("units moved = %v; want 5", v)
	}
	// Nothing more to do: no flag, no drop.
	if err := e.r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.settled(item); st[store.TransferDone] != 1 {
		t.Fatalf("a pass without demand moved stock: %v", st)
	}
}

// Re-bucketed in MySQL and not yet warmed, Redis' buckets are not MySQL's
// rows: no transfer is planned until the warm.
func TestPassWaitsForWarmedBucketCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.item(40, 4)
	e.admit(item, 4, 1, 10)
	e.setWant(item, 1)
	meta := stock.KeysOf(item).Meta
	if err := e.rdb.HSet(ctx, meta, "buckets", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.states(item); len(st) != 0 {
		t.Fatalf("transfers planned while Redis has another bucket count: %v", st)
	}
	if err := e.rdb.HSet(ctx, meta, "buckets", 4).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if st := e.settled(item); st[store.TransferDone] != 1 {
		t.Fatalf("transfers once the counts agree = %v; want one DONE", st)
	}
	e.conserved(item, 4, 40)
}

// With a lease only one of two replicas passes; the other takes over once
// the holder gives it up.
func TestLeaseOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	key := "fs:test:rebalance:lease:" + itoa(time.Now().UnixNano())
	t.Cleanup(func() { e.rdb.Del(context.Background(), key) })
	a := e.rebalancer(Config{Interval: 10 * time.Millisecond, Lease: time.Minute, LeaseKey: key, Holder: "a"})
	b := e.rebalancer(Config{Interval: 10 * time.Millisecond, Lease: time.Minute, LeaseKey: key, Holder: "b"})
	item := e.item(20, 2)
	e.setWant(item, 1)
	e.admit(item, 2, 1, 10)
	if err := b.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if holder := e.rdb.Get(ctx, key).Val(); holder != "b" {
		t.Fatalf("lease holder = %q; want b", holder)
	}
	if st := e.settled(item); st[store.TransferDone] != 1 {
		t.Fatalf("transfers = %v; want one, by b", st)
	}
	actx, stopA := context.WithCancel(ctx)
	bctx, stopB := context.WithCancel(ctx)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- a.Run(actx) }()
	go func() { doneB <- b.Run(bctx) }()
	stopB()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	e.admit(item, 2, 1, 5)
	e.setWant(item, 1)
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		return e.rdb.Get(ctx, key).Val() == "a" && e.states(item)[store.TransferDone] == 2
	}, "a did not take over: %v", lazy(func() string {
		return fmt.Sprintf("holder %q, transfers %v", e.rdb.Get(ctx, key).Val(), e.states(item))
	}))
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	if e.rdb.Exists(ctx, key).Val() != 0 {
		t.Fatal("a kept the lease after it stopped")
	}
	e.settled(item)
	e.conserved(item, 2, 20)
}

// lazy is a failure message's part computed when the failure is reported,
// not when the wait started.
type lazy func() string

func (f lazy) String() string { return f() }
