package stock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// A client that resends the admission script after a lost reply (go-redis
// retries a command after a read timeout) must get its own reservation back,
// not "already" for it, and take the stock once.
func TestAdmitIdempotentPerRequestID(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 5, 1)
	for _, key := range []string{"", "k-1"} {
		user := int64(len(key) + 1)
		req := stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1, RequestID: reqid.New(item, time.Now()),
			IdempotencyKey: key, IdempotencyTTL: time.Minute}
		for i := range 3 {
			r, err := s.Admit(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if r.Code != stock.Admitted {
				t.Fatalf("key %q: attempt %d of the same request id answered %+v, want ok", key, i+1, r)
			}
		}
	}
	st, err := s.ReadState(ctx, item)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stock != 3 || st.Pending != 2 || st.Buyers != 2 {
		t.Fatalf("after 3 sends of 2 requests: %+v, want stock 3, 2 pending, 2 buyers", st)
	}
}

// "already" names the request that holds the item, so the buyer can poll it.
func TestAlreadyNamesTheHoldingRequest(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 5, 1)
	first := stock.AdmitRequest{ItemID: item, UserID: 9, Qty: 1, RequestID: reqid.New(item, time.Now())}
	if r, err := s.Admit(ctx, first); err != nil || r.Code != stock.Admitted {
		t.Fatalf("first: %+v %v", r, err)
	}
	r := admit(t, s, item, 9, 1, "")
	if r.Code != stock.Already || r.RequestID != first.RequestID {
		t.Fatalf("second attempt: %+v, want already naming %s", r, first.RequestID)
	}
	rid, held, warmed, err := s.HeldBy(ctx, item, 0, 9)
	if err != nil || !held || !warmed || rid != first.RequestID {
		t.Fatalf("HeldBy: %q %v %v %v", rid, held, warmed, err)
	}
	if _, held, _, _ := s.HeldBy(ctx, item, 0, 10); held {
		t.Fatal("user 10 holds nothing")
	}
}

// A copy of the call that reaches Redis after the caller gave up does
// nothing, so the caller's release after its deadline is final.
func TestAdmitAfterDeadlineDoesNothing(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 5, 1)
	r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, UserID: 1, Qty: 1, RequestID: reqid.New(item, time.Now()),
		Deadline: time.Now().Add(-time.Second)})
	if err != nil || r.Code != stock.Late {
		t.Fatalf("late copy: %+v %v", r, err)
	}
	if st, _ := s.ReadState(ctx, item); st.Stock != 5 || st.Pending != 0 || st.Buyers != 0 {
		t.Fatalf("late copy changed state: %+v", st)
	}
}

// A replay answers "replay" only after the first request's publish was
// acknowledged (Ack); before that it says "replay_unacked".
func TestReplayOnlyAfterAck(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 5, 1)
	first := stock.AdmitRequest{ItemID: item, UserID: 3, Qty: 1, RequestID: reqid.New(item, time.Now()),
		IdempotencyKey: "k", IdempotencyTTL: time.Minute}
	if r, err := s.Admit(ctx, first); err != nil || r.Code != stock.Admitted {
		t.Fatalf("first: %+v %v", r, err)
	}
	if r := admit(t, s, item, 3, 1, "k"); r.Code != stock.ReplayUnacked || r.RequestID != first.RequestID {
		t.Fatalf("replay before the ack: %+v", r)
	}
	for range 2 { // idempotent
		if ok, err := s.Ack(ctx, item, 3, "k", first.RequestID); err != nil || !ok {
			t.Fatalf("ack: %v %v", ok, err)
		}
	}
	if ok, _ := s.Ack(ctx, item, 3, "k", "someone-else"); ok {
		t.Fatal("ack of another request id must not mark the key")
	}
	if r := admit(t, s, item, 3, 1, "k"); r.Code != stock.Replay || r.RequestID != first.RequestID {
		t.Fatalf("replay after the ack: %+v", r)
	}
	ttl, err := s.Client().PTTL(ctx, stock.KeysOf(item).Idempotency(3, "k")).Result()
	if err != nil || ttl <= 0 {
		t.Fatalf("the ack must keep the key's TTL: %v %v", ttl, err)
	}
}

// Warm writes the buyer marks in chunks; every mark must keep its pair
// (user id -> request id) across the chunk boundaries.
func TestWarmManyHolders(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := testenv.ItemID()
	now := time.Now()
	var hs []stock.Holder
	for u := int64(1); u <= 1501; u++ {
		hs = append(hs, stock.Holder{UserID: u, RequestID: fmt.Sprintf("r-%d", u)})
	}
	if err := s.Warm(ctx, stock.Snapshot{ItemID: item, Stock: 3, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour),
		PerUserLimit: 1, Buyers: hs}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []int64{1, 500, 501, 999, 1000, 1001, 1501} {
		rid, held, warmed, err := s.HeldBy(ctx, item, 0, u)
		if err != nil || !held || !warmed || rid != fmt.Sprintf("r-%d", u) {
			t.Errorf("user %d: %q %v %v %v", u, rid, held, warmed, err)
		}
	}
	if r := admit(t, s, item, 1000, 1, ""); r.Code != stock.Already || r.RequestID != "r-1000" {
		t.Fatalf("warmed buyer: %+v", r)
	}
}

// The holder bitmap has the bit of every user admitted or warmed as a holder
// (no false negatives: a clear bit lets the sold-out flag answer from memory)
// and few others.
func TestHolderBits(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item := warmItem(t, s, 1000, 1)
	for u := int64(1); u <= 300; u++ {
		admit(t, s, item, u, 1, "")
	}
	bits, err := s.HolderBits(ctx, item, 1)
	if err != nil {
		t.Fatal(err)
	}
	for u := int64(1); u <= 300; u++ {
		if !bits.MayHold(u) {
			t.Fatalf("admitted user %d has a clear bit", u)
		}
	}
	fp := 0
	for u := int64(1_000_000); u < 1_010_000; u++ {
		if bits.MayHold(u) {
			fp++
		}
	}
	if fp > 10 {
		t.Errorf("%d of 10,000 non-holders look like holders with 300 holders in the bitmap", fp)
	}
	// Warm rebuilds it from the holders it is given, and only those.
	if err := s.Client().Del(ctx, stock.KeysOf(item).Reservations).Err(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := s.Warm(ctx, stock.Snapshot{ItemID: item, Stock: 5, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour),
		PerUserLimit: 1, Buyers: []stock.Holder{{UserID: 5_000_000, RequestID: "r-a"}}}); err != nil {
		t.Fatal(err)
	}
	if bits, err = s.HolderBits(ctx, item, 1); err != nil || !bits.MayHold(5_000_000) || bits.MayHold(1) {
		t.Fatalf("after warm: holder %v, user 1 %v (%v)", bits.MayHold(5_000_000), bits.MayHold(1), err)
	}
}
