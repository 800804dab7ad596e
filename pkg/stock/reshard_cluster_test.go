//go:build cluster

// This file passes 400 lines for one reason: it is one scenario, a live
// reshard of the sale item's slot with buyers admitted at each phase of
// the move, and the checkers of what each phase promised; the slot moving
// itself is testenv.MoveSlot.

package stock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// A live resharding moves the sale item's slot from one primary to another
// while buyers are admitted through the real Store, the way an operator's
// `redis-cli --cluster reshard` does: CLUSTER SETSLOT IMPORTING on the
// target, MIGRATING on the source, MIGRATE key by key, SETSLOT NODE.
//
// admit.lua names every key of the item (one hash tag, one slot). While the
// slot migrates a multi-key command is served by the source as long as all
// its keys are there; once some have moved (or one of them exists nowhere,
// like a new Idempotency-Key) the source answers TRYAGAIN, and the target,
// ASKed, answers TRYAGAIN until it has them all. go-redis' ClusterClient
// retries TRYAGAIN (shouldRetry: the node client's MaxRetries, then up to
// MaxRedirects more attempts with a backoff of some tens of ms), follows ASK
// with ASKING and MOVED with a slot-map reload. A split longer than those
// retries reaches the caller as TRYAGAIN (or as ASK, when the attempts run
// out just as the last key moves): the script never ran, so it must be
// a "not sent" error (stock.NotSent), which the admission answers
// 503 unavailable with nothing decided, and the buyer may simply retry.
//
// Checked: exactly the stock admitted, no buyer admitted twice, the stock
// never negative, every reservation and buyer mark on the new primary after
// the move, and no request that failed with TRYAGAIN left anything behind.
// The slot is moved back at the end (the deterministic half of the test:
// one caller at each stage of the move), and put back by `redis-cli
// --cluster fix` if the test stops half-way.
func TestClusterAdmissionsThroughSlotMigration(t *testing.T) {
	cc := testenv.RedisCluster(t)
	s := stock.New(cc)
	ctx := context.Background()
	item, slot := testenv.ItemInEmptySlot(t, cc)
	from := testenv.ClusterNodeAt(t, testenv.PrimaryOf(t, cc, item))
	to, others := testenv.MoveTargets(t, cc, from)
	t.Logf("item %d, slot %d: %s -> %s", item, slot, from.Addr, to.Addr)
	home := false
	t.Cleanup(func() {
		if !home {
			testenv.PutSlotBack(t, slot, from, to, others)
		}
	})

	// Half the buyers go through a Coalescer, as the ingress does: its
	// pipelines meet TRYAGAIN per command, which go-redis' cluster pipeline
	// retries only for a node's first command.
	co := stock.NewCoalescer(cc, stock.CoalesceConfig{MaxBatch: 128, Flushers: 4})
	t.Cleanup(co.Close)
	stores := []*stock.Store{s, s.WithCoalescer(co)}
	kinds := []string{"single", "coalesced"}

	const units = 4000
	testenv.WarmAt(t, s, item, units)
	// The first admission creates the holders, reservations and holder-bit
	// keys: with one of admit.lua's keys missing, a migrating source answers
	// TRYAGAIN for the whole move (a missing key counts as moved).
	var res outcomes
	first := admitAt(t, s, item, 1, 1)
	if first.Code != stock.Admitted {
		t.Fatalf("first admission: %+v", first)
	}
	res.admitted(1, first.RequestID, "before")

	// Buyers, 8 at a time, paced so the sale outlasts the move; each buyer
	// retries a "not sent" error with a new request, as a client retries a
	// 503; every fifth one tries again after its 202 and must be refused.
	var phase atomic.Value
	phase.Store("before")
	var moved atomic.Bool
	var nextUser atomic.Int64
	nextUser.Store(1)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if moved.Load() && res.soldOut.Load() {
					return
				}
				u := nextUser.Add(1)
				if u > 4*units {
					return
				}
				res.buy(t, stores[i%2], kinds[i%2], item, u, &phase)
				// Real time is the subject: the buyers are paced so the
				// sale lasts through every phase of the move.
				time.Sleep(4 * time.Millisecond)
			}
		}()
	}
	// Stock is read on its own too (single-key GETs follow ASK and MOVED).
	watchDone := make(chan struct{})
	var minStock atomic.Int64
	minStock.Store(units)
	go func() {
		defer close(watchDone)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for !(moved.Load() && res.soldOut.Load()) && !res.stopped.Load() {
			if n, ok, err := s.Stock(ctx, item); err == nil && ok && n < minStock.Load() {
				minStock.Store(n)
			}
			<-tick.C
		}
	}()

	start := time.Now()
	testenv.MoveSlot(t, slot, from, to, others, 1, func(p string) {
		phase.Store(p)
		// Real time is the subject: each phase of the move lasts while
		// the buyers go on, so admissions meet it.
		time.Sleep(400 * time.Millisecond)
		// A split lasts until a refusal reached a caller, for up to 10 s:
		// go-redis retries TRYAGAIN for 100-200 ms (more on a loaded
		// machine) before it gives up, and a call it retried past the
		// split ran on the next phase, so 400 ms of split could end with
		// every refused call still inside its retries (1 run in 8 of the
		// cluster packages side by side, 2026-12-07).
		if p == "split" {
			deadline := time.After(10 * time.Second)
			poll := time.NewTicker(10 * time.Millisecond)
			defer poll.Stop()
			for !res.refusedYet() {
				select {
				case <-poll.C:
				case <-deadline:
					return // the check below says no refusal was seen
				}
			}
		}
	})
	phase.Store("after")
	moved.Store(true)
	t.Logf("slot %d moved in %v under load", slot, time.Since(start).Round(time.Millisecond))
	if p := testenv.PrimaryOf(t, cc, item); p != to.Addr {
		t.Fatalf("after the move the cluster says slot %d is on %s, want %s", slot, p, to.Addr)
	}
	waitOrStop(t, &wg, &res)
	<-watchDone

	res.mu.Lock()
	t.Logf("admitted by phase %v; errors not sent by store, phase and reply %v; %d refused second tries",
		res.byPhase, res.notSentByPhase, res.refusedAgain)
	if len(res.ambiguous) > 0 {
		t.Errorf("%d admissions failed ambiguously (not a refusal before running), first: %v", len(res.ambiguous), res.ambiguous[0])
	}
	for _, p := range []string{"migrating", "asking"} { // both stores' buyers together
		if res.byPhase[p] == 0 {
			t.Errorf("no admission completed while the slot was %s: the test did not exercise it (%v)", p, res.byPhase)
		}
	}
	if sum(res.notSentByPhase) == 0 {
		t.Errorf("no admission reached the caller as a refusal during %v of split keys", 400*time.Millisecond)
	}
	if len(res.holder) != units {
		t.Errorf("%d buyers admitted, want exactly the stock, %d", len(res.holder), units)
	}
	if res.negative > 0 || minStock.Load() < 0 {
		t.Errorf("stock went negative: %d verdicts below 0, lowest read %d", res.negative, minStock.Load())
	}
	holder := res.holder
	failed := res.failedRIDs
	res.mu.Unlock()

	checkHeld(t, s, cc, item, holder, failed, 0)
	// The keys are all on the new primary, none left on the old one.
	if n := countKeys(t, from, slot); n != 0 {
		t.Errorf("%d keys of slot %d left on %s after the move", n, slot, from.Addr)
	}
	if n := countKeys(t, to, slot); n == 0 {
		t.Errorf("no keys of slot %d on %s after the move", slot, to.Addr)
	}

	// The way back, one caller at each stage: which answer the caller sees,
	// and that a TRYAGAIN left nothing behind. One unit is given back first,
	// so a request that ran would show in the stock.
	var someone int64
	for u := range holder {
		someone = u
		break
	}
	if ok, err := s.Release(ctx, item, holder[someone], stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
		t.Fatalf("release of user %d: %v %v", someone, ok, err)
	}
	delete(holder, someone)
	var anyHolder int64
	for u := range holder {
		anyHolder = u
		break
	}
	newBuyer := int64(10 * units)
	var refused []string
	testenv.MoveSlot(t, slot, to, from, others, 1, func(p string) {
		switch p {
		case "migrating":
			// All keys on the source: a plain call runs there.
			expectVerdict(t, s, item, anyHolder, "", stock.Already)
			// A new Idempotency-Key is a key the source lacks: TRYAGAIN
			// for as long as the slot migrates.
			for i, st := range stores {
				refused = append(refused, expectNotSent(t, st, kinds[i], item, newBuyer, "k-"+strconv.Itoa(i)))
			}
		case "split":
			if len(refused) == len(stores) {
				for i, st := range stores {
					refused = append(refused, expectNotSent(t, st, kinds[i], item, newBuyer, ""))
				}
			}
		case "asking":
			// All keys on the target: the source answers ASK, go-redis
			// follows it with ASKING and the script runs there.
			expectVerdict(t, s, item, anyHolder, "", stock.Already)
		}
	})
	home = true
	if p := testenv.PrimaryOf(t, cc, item); p != from.Addr {
		t.Fatalf("slot %d back on %s, want %s", slot, p, from.Addr)
	}
	checkHeld(t, s, cc, item, holder, append(failed, refused...), 1)
	// The refused buyer retries, as after a 503: a new request, admitted.
	if r := admitAt(t, s, item, newBuyer, 1); r.Code != stock.Admitted || r.StockLeft != 0 {
		t.Fatalf("the refused buyer's retry after the move: %+v, want admitted, 0 left", r)
	}
}

// outcomes collects what the buyers were told.
type outcomes struct {
	mu             sync.Mutex
	holder         map[int64]string // user -> the request admitted
	byPhase        map[string]int
	notSentByPhase map[string]int
	failedRIDs     []string // requests answered with a "not sent" error
	ambiguous      []error
	refusedAgain   int
	negative       int
	soldOut        atomic.Bool
	stopped        atomic.Bool
}

// refusedYet reports whether a "not sent" refusal reached a buyer.
func (o *outcomes) refusedYet() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return sum(o.notSentByPhase) > 0
}

func (o *outcomes) admitted(user int64, rid, phase string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.holder == nil {
		o.holder, o.byPhase, o.notSentByPhase = map[int64]string{}, map[string]int{}, map[string]int{}
	}
	o.holder[user] = rid
	o.byPhase[phase]++
}

// buy is one buyer: admitted, sold out, or (after "not sent" errors, each
// retried with a new request) one of those; a fifth of the admitted try again.
func (o *outcomes) buy(t *testing.T, s *stock.Store, kind string, item, user int64, phase *atomic.Value) {
	for {
		if o.stopped.Load() {
			return
		}
		rid := reqid.New(item, time.Now())
		r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1, RequestID: rid, Now: time.Now()})
		p := phase.Load().(string)
		if err != nil {
			o.mu.Lock()
			if stock.NotSent(err) && errors.Is(err, stock.ErrUnavailable) {
				o.notSentByPhase[kind+" "+p+" "+refusal(err)]++
				o.failedRIDs = append(o.failedRIDs, rid)
			} else {
				o.ambiguous = append(o.ambiguous, fmt.Errorf("%s user %d in phase %s: %w", kind, user, p, err))
			}
			o.mu.Unlock()
			// Real time is the subject: the call was refused (mostly
			// TRYAGAIN: the slot's keys are split), so the buyer retries
			// after a pause, as a client retries a 503.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		switch r.Code {
		case stock.Admitted:
			if r.StockLeft < 0 {
				o.mu.Lock()
				o.negative++
				o.mu.Unlock()
			}
			o.mu.Lock()
			_, twice := o.holder[user]
			o.mu.Unlock()
			if twice {
				t.Errorf("user %d admitted twice (second request %s)", user, rid)
			}
			o.admitted(user, rid, p)
			if user%5 == 0 {
				again := reqid.New(item, time.Now())
				r2, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1, RequestID: again, Now: time.Now()})
				if err == nil && r2.Code != stock.Already {
					t.Errorf("user %d's second request in phase %s: %+v, want already (holding %s)", user, phase.Load(), r2, rid)
				}
				if err == nil && r2.Code == stock.Already && r2.RequestID != rid {
					t.Errorf("user %d's second request names %s, want %s", user, r2.RequestID, rid)
				}
				if err == nil {
					o.mu.Lock()
					o.refusedAgain++
					o.mu.Unlock()
				}
			}
		case stock.SoldOut:
			if r.StockLeft < 0 {
				o.mu.Lock()
				o.negative++
				o.mu.Unlock()
			}
			o.soldOut.Store(true)
		default:
			t.Errorf("user %d in phase %s: verdict %+v", user, p, r)
		}
		return
	}
}

// waitOrStop waits for the buyers, at most a minute.
func waitOrStop(t *testing.T, wg *sync.WaitGroup, o *outcomes) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		o.stopped.Store(true)
		<-done
		t.Fatal("the buyers did not finish within a minute of the move")
	}
}

// checkHeld: the item's Redis state is exactly the admitted buyers, each
// holding its request with a reservation, stockLeft units left, and none of
// the requests that failed "not sent" reserved or marked.
func checkHeld(t *testing.T, s *stock.Store, cc *redis.ClusterClient, item int64, holder map[int64]string, failed []string, stockLeft int64) {
	t.Helper()
	ctx := context.Background()
	st, err := s.ReadState(ctx, item)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stock != stockLeft || st.Pending != int64(len(holder)) || st.Buyers != int64(len(holder)) || st.PendingQty != int64(len(holder)) {
		t.Errorf("Redis state %+v, want stock %d and %d reservations of 1 unit by %d buyers", st, stockLeft, len(holder), len(holder))
	}
	missing := 0
	for u, rid := range holder {
		rid2, held, _, err := s.HeldBy(ctx, item, 0, u)
		if err != nil {
			t.Fatal(err)
		}
		r, ok, err := s.GetReservation(ctx, item, rid)
		if err != nil {
			t.Fatal(err)
		}
		if !held || rid2 != rid || !ok || r.UserID != u || r.Qty != 1 {
			missing++
			if missing <= 3 {
				t.Errorf("user %d: mark %q (held %v), reservation %+v (found %v), want both naming %s", u, rid2, held, r, ok, rid)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d admitted buyers lack their mark or reservation", missing, len(holder))
	}
	for _, rid := range failed {
		if _, ok, err := s.GetReservation(ctx, item, rid); err != nil || ok {
			t.Errorf("request %s failed \"not sent\" but is reserved (%v)", rid, err)
		}
	}
}

func expectVerdict(t *testing.T, s *stock.Store, item, user int64, key string, want stock.AdmitCode) {
	t.Helper()
	r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1,
		RequestID: reqid.New(item, time.Now()), Now: time.Now(), IdempotencyKey: key, IdempotencyTTL: time.Minute})
	if err != nil || r.Code != want {
		t.Fatalf("user %d mid-move: %+v %v, want %s", user, r, err, want)
	}
}

// expectNotSent: an admission mid-move fails, after go-redis' own retries,
// with TRYAGAIN, seen by the caller as unavailable and not sent. It returns
// the request id, which must never show up reserved.
func expectNotSent(t *testing.T, s *stock.Store, kind string, item, user int64, key string) string {
	t.Helper()
	rid := reqid.New(item, time.Now())
	start := time.Now()
	r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1, RequestID: rid,
		Now: time.Now(), IdempotencyKey: key, IdempotencyTTL: time.Minute})
	took := time.Since(start)
	if err == nil {
		t.Fatalf("%s: user %d (key %q) mid-move: %+v, want a TRYAGAIN error", kind, user, key, r)
	}
	if !redis.IsTryAgainError(err) {
		t.Fatalf("%s: user %d (key %q) mid-move: %v, want TRYAGAIN", kind, user, key, err)
	}
	if !errors.Is(err, stock.ErrUnavailable) || !stock.NotSent(err) {
		t.Errorf("TRYAGAIN (%v) is not reported as a call that never ran: NotSent %v", err, stock.NotSent(err))
	}
	t.Logf("%s, key %q: TRYAGAIN reached the caller after %v of go-redis retries", kind, key, took.Round(time.Millisecond))
	return rid
}

// refusal names the Cluster's refusal in err.
func refusal(err error) string {
	if redis.IsTryAgainError(err) {
		return "TRYAGAIN"
	}
	if _, ok := redis.IsAskError(err); ok {
		return "ASK"
	}
	if _, ok := redis.IsMovedError(err); ok {
		return "MOVED"
	}
	return "other"
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func countKeys(t *testing.T, n testenv.SlotNode, slot int) int64 {
	t.Helper()
	c, err := n.C.ClusterCountKeysInSlot(context.Background(), slot).Result()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
