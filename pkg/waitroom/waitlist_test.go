package waitroom_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// soldOutQueued warms an open, queued item of units and admits users
// 1..units (with grants), so its stock is gone; it returns the item, its
// snapshot and the admitted request ids in user order.
func soldOutQueued(t *testing.T, s *stock.Store, units int) (int64, stock.Snapshot, []string) {
	t.Helper()
	ctx := context.Background()
	item := testenv.ItemID()
	now := time.Now()
	snap := stock.Snapshot{ItemID: item, Stock: int64(units), StartsAt: now.Add(-time.Second), EndsAt: now.Add(time.Hour), PerUserLimit: 1, Queue: true}
	if err := s.Warm(ctx, snap); err != nil {
		t.Fatal(err)
	}
	rids := make([]string, units)
	for i := range rids {
		rids[i] = reqid.New(item, now)
		r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: 1, UserID: int64(i + 1), Qty: 1, RequestID: rids[i], Now: now, Granted: true})
		if err != nil || r.Code != stock.Admitted {
			t.Fatalf("admit user %d: %+v %v", i+1, r, err)
		}
	}
	return item, snap, rids
}

// claim is user's order on their waitlist offer.
func claim(t *testing.T, s *stock.Store, item, user int64, qty int) stock.AdmitCode {
	t.Helper()
	r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: item, Buckets: 1, UserID: user, Qty: qty, RequestID: reqid.New(item, time.Now()), Now: time.Now(), Claim: true})
	if err != nil {
		t.Fatalf("claim of user %d: %v", user, err)
	}
	return r.Code
}

// checkI9 fails unless every unit that came into item's waitlist is in
// exactly one place.
func checkI9(t *testing.T, s *stock.Store, item int64) waitroom.Waitlist {
	t.Helper()
	w, err := waitroom.NewStore(s).ReadWaitlist(context.Background(), item)
	if err != nil {
		t.Fatal(err)
	}
	if w.Pool < 0 || w.Offers < 0 || w.In != w.Pool+w.Offers+w.Claimed+w.Returned {
		t.Fatalf("I9: %+v", w)
	}
	return w
}

// untilRedisPasses waits until Redis' clock, by which the waitlist's
// scripts judge an offer's window, reaches at: a test about a window's end
// polls for it rather than sleeping past it on a loaded machine.
func untilRedisPasses(t *testing.T, s *stock.Store, at time.Time) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
		now, err := s.Client().Time(context.Background()).Result()
		return err == nil && now.UnixMilli() >= at.UnixMilli()
	}, "Redis' clock never reached %v", at)
}

// offerOf is user's live offer of item; the test fails when there is none.
func offerOf(t *testing.T, s *stock.Store, item, user int64) waitroom.Offer {
	t.Helper()
	o, ok, err := waitroom.NewStore(s).OfferOf(context.Background(), item, user)
	if err != nil || !ok {
		t.Fatalf("user %d's offer: %+v %v %v, want one", user, o, ok, err)
	}
	return o
}

// TestWaitlistHandOff walks one item's released units through the
// waitlist: a unit released while the item is sold out is held (not in the
// stock), offered to the first ticket in line whose buyer holds nothing,
// claimed once by that buyer only, and an offer left unclaimed passes to
// the next ticket; with nobody left in line the unit goes back to the
// stock.
func TestWaitlistHandOff(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	w := waitroom.NewStore(s)
	ctx := context.Background()
	item, _, admitted := soldOutQueued(t, s, 2)
	rids := map[int64]string{1: admitted[0], 2: admitted[1]}
	if err := s.Settle(ctx, item, admitted); err != nil {
		t.Fatal(err)
	}
	// The line: users 1 and 2 hold the item, 3, 4 and 5 wait.
	line := make([]waitroom.Candidate, 5)
	for i := range line {
		line[i] = waitroom.Candidate{Position: int64(i + 1), Ticket: fmt.Sprintf("%032x", i+1), UserID: int64(i + 1)}
	}

	if r, err := s.Restore(ctx, item, 0, rids[1], 1); err != nil || r != stock.RestoreWaitlisted {
		t.Fatalf("restore while sold out: %v %v, want held for the waitlist", r, err)
	}
	if r, err := s.Restore(ctx, item, 0, rids[1], 1); err != nil || r != stock.RestoreSeen {
		t.Fatalf("restore again: %v %v, want a no-op", r, err)
	}
	if left, _, _ := s.Stock(ctx, item); left != 0 {
		t.Fatalf("stock %d after a waitlisted restore, want 0: the unit is the waitlist's", left)
	}
	if c := claim(t, s, item, 3, 1); c != stock.NoOffer {
		t.Fatalf("claim before any offer: %s, want no_offer", c)
	}
	if w := checkI9(t, s, item); w.Pool != 1 || w.In != 1 {
		t.Fatalf("after the restore: %+v, want pool 1 of 1", w)
	}

	p, err := w.OfferReleased(ctx, item, time.Hour, line, true)
	if err != nil || p.Offered != 1 || p.Cursor != 3 || p.Pool != 0 {
		t.Fatalf("offer: %+v %v, want one offer, to position 3", p, err)
	}
	if o, ok, err := w.OfferOf(ctx, item, 3); err != nil || !ok || o.Ticket != line[2].Ticket || o.Position != 3 {
		t.Fatalf("user 3's offer: %+v %v %v", o, ok, err)
	}
	if _, ok, _ := w.OfferOf(ctx, item, 4); ok {
		t.Fatal("user 4 has an offer: one unit went to two tickets")
	}
	if c := claim(t, s, item, 4, 1); c != stock.NoOffer {
		t.Fatalf("claim by a buyer without the offer: %s, want no_offer", c)
	}
	if c := claim(t, s, item, 3, 2); c != stock.OverLimit {
		t.Fatalf("claim of 2 units: %s, want over_limit (an offer is one unit)", c)
	}
	if c := claim(t, s, item, 3, 1); c != stock.Admitted {
		t.Fatalf("claim by the offer's buyer: %s, want ok", c)
	}
	if c := claim(t, s, item, 3, 1); c != stock.Already {
		t.Fatalf("second claim: %s, want already", c)
	}
	if left, _, _ := s.Stock(ctx, item); left != 0 {
		t.Fatalf("stock %d after the claim, want 0: it took the offer's unit", left)
	}
	if w := checkI9(t, s, item); w.Claimed != 1 || w.Offers != 0 {
		t.Fatalf("after the claim: %+v", w)
	}

	// An offer left unclaimed lapses and passes on, in the same pass.
	if r, _ := s.Restore(ctx, item, 0, rids[2], 1); r != stock.RestoreWaitlisted {
		t.Fatalf("second restore: %v", r)
	}
	if p, err = w.OfferReleased(ctx, item, 50*time.Millisecond, line[3:], true); err != nil || p.Offered != 1 || p.Cursor != 4 {
		t.Fatalf("second offer: %+v %v, want position 4", p, err)
	}
	untilRedisPasses(t, s, offerOf(t, s, item, 4).Expires)
	if c := claim(t, s, item, 4, 1); c != stock.NoOffer {
		t.Fatalf("claim after the window: %s, want no_offer", c)
	}
	if p, err = w.OfferReleased(ctx, item, 50*time.Millisecond, line[4:], true); err != nil || p.Lapsed != 1 || p.Offered != 1 || p.Cursor != 5 {
		t.Fatalf("lapse: %+v %v, want lapsed 1 and offered to position 5", p, err)
	}
	if _, ok, _ := w.OfferOf(ctx, item, 4); ok {
		t.Fatal("user 4 keeps a lapsed offer")
	}
	checkI9(t, s, item)

	// Nobody left in line: the unit goes back to the stock.
	untilRedisPasses(t, s, offerOf(t, s, item, 5).Expires)
	if p, err = w.OfferReleased(ctx, item, time.Second, nil, true); err != nil || p.Lapsed != 1 || p.Returned != 1 || p.Pool != 0 {
		t.Fatalf("end of the line: %+v %v, want lapsed 1, returned 1", p, err)
	}
	if left, _, _ := s.Stock(ctx, item); left != 1 {
		t.Fatalf("stock %d after the return, want 1", left)
	}
	if w := checkI9(t, s, item); w.In != 2 || w.Claimed != 1 || w.Returned != 1 || w.Lapsed != 2 || w.Offered != 3 {
		t.Fatalf("final: %+v", w)
	}
}

// TestRestoreGoesToTheStockOutsideTheWaitlist: a unit released while the
// item still has stock, or of an item without a queue, goes back to the
// stock as it always did.
func TestRestoreGoesToTheStockOutsideTheWaitlist(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	now := time.Now()
	for _, queue := range []bool{true, false} {
		item := testenv.ItemID()
		if err := s.Warm(ctx, stock.Snapshot{ItemID: item, Stock: 2, StartsAt: now.Add(-time.Second), EndsAt: now.Add(time.Hour), PerUserLimit: 1, Queue: queue}); err != nil {
			t.Fatal(err)
		}
		rid := reqid.New(item, now)
		if r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: 1, UserID: 1, Qty: 1, RequestID: rid, Now: now, Granted: true}); err != nil || r.Code != stock.Admitted {
			t.Fatalf("admit: %+v %v", r, err)
		}
		if r, err := s.Restore(ctx, item, 0, rid, 1); err != nil || r != stock.RestoreApplied {
			t.Fatalf("queue %v: restore with stock left: %v %v, want to the stock", queue, r, err)
		}
		if left, _, _ := s.Stock(ctx, item); left != 2 {
			t.Fatalf("queue %v: stock %d, want 2", queue, left)
		}
	}
}

// TestWaitlistClaimsRaceOffersAndLapses races, on one sold-out item, four
// gate holders passing with a short claim window against every other
// waiting buyer claiming again and again (the rest never claim, so their
// offers lapse and pass on): every claim that won took a unit an
// offer held for that buyer, no buyer won twice, and every released unit
// is in exactly one place at the end (I9, and the stock plus the waitlist
// plus the claims add up to the units released).
func TestWaitlistClaimsRaceOffersAndLapses(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	wr := waitroom.NewStore(s)
	ctx := context.Background()
	const units, waiting = 30, 90
	item, _, rids := soldOutQueued(t, s, units)
	var line []waitroom.Candidate
	for u := int64(1); u <= units; u++ {
		line = append(line, waitroom.Candidate{Position: u, Ticket: fmt.Sprintf("%032x", u), UserID: u})
	}
	for i, rid := range rids { // sold out now: every unit released is the waitlist's
		if r, err := s.Restore(ctx, item, 0, rid, 1); err != nil || r != stock.RestoreWaitlisted {
			t.Fatalf("restore %d: %v %v", i+1, r, err)
		}
	}
	for u := int64(units + 1); u <= units+waiting; u++ {
		line = append(line, waitroom.Candidate{Position: u, Ticket: fmt.Sprintf("%032x", u), UserID: u})
	}

	// Each racer paced by a ticker of its own, so the race spreads over
	// the 30 ms windows (offers must lapse by Redis' clock) without
	// spinning; it runs until it is over: every unit claimed or back in
	// the stock, nothing left in the pool or on offer.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt() // a failed wait below stops the racers too
	var gateErr atomic.Value
	racer := func(every time.Duration, once func() bool) {
		wg.Go(func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for once() {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
	}
	for range 4 {
		racer(3*time.Millisecond, func() bool {
			if _, err := wr.OfferReleased(ctx, item, 30*time.Millisecond, line, true); err != nil {
				gateErr.Store(err)
				return false
			}
			return true
		})
	}
	won := make([]atomic.Int32, units+waiting+1)
	var claims atomic.Int64
	for u := int64(units + 1); u <= units+waiting; u += 2 { // the others let their offers lapse
		racer(time.Duration(1+u%7)*time.Millisecond, func() bool {
			r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: 1, UserID: u, Qty: 1, RequestID: reqid.New(item, time.Now()), Now: time.Now(), Claim: true})
			if err == nil && r.Code == stock.Admitted {
				won[u].Add(1)
				claims.Add(1)
			}
			return true
		})
	}
	testenv.Eventually(t, 30*time.Second, 10*time.Millisecond, func() bool {
		w, err := wr.ReadWaitlist(ctx, item)
		return (err == nil && w.Held() == 0) || gateErr.Load() != nil
	}, "the race never ended: units still in the pool or on offer")
	halt()
	if err := gateErr.Load(); err != nil {
		t.Fatal(err)
	}
	for u := range won {
		if n := won[u].Load(); n > 1 {
			t.Errorf("user %d claimed %d units", u, n)
		}
	}
	w := checkI9(t, s, item)
	left, _, _ := s.Stock(ctx, item)
	if w.Claimed != claims.Load() || left+w.Pool+w.Offers+w.Claimed != units || w.In != units {
		t.Fatalf("claims won %d; waitlist %+v; stock %d: want in %d = stock + pool + offers + claimed", claims.Load(), w, left, units)
	}
	if w.Claimed == 0 || w.Lapsed == 0 {
		t.Fatalf("the race claimed %d and lapsed %d: it did not exercise both", w.Claimed, w.Lapsed)
	}
	t.Logf("%d units: %d claimed, %d offered, %d lapsed, %d returned, %d left in the waitlist", units, w.Claimed, w.Offered, w.Lapsed, w.Returned, w.Held())
}

// TestWarmGivesTheWaitlistsUnitsToTheStock: a full warm sets the stock
// from MySQL, which never held the waitlist's units apart, so the units the
// waitlist held (its pool and its offers) are the stock's again and counted
// as returned: nothing is counted twice (I3) and I9 still adds up.
func TestWarmGivesTheWaitlistsUnitsToTheStock(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	ctx := context.Background()
	item, snap, rids := soldOutQueued(t, s, 2)
	if err := s.Settle(ctx, item, rids); err != nil {
		t.Fatal(err)
	}
	for _, rid := range rids {
		if r, err := s.Restore(ctx, item, 0, rid, 1); err != nil || r != stock.RestoreWaitlisted {
			t.Fatalf("restore: %v %v", r, err)
		}
	}
	line := []waitroom.Candidate{{Position: 3, Ticket: fmt.Sprintf("%032x", 3), UserID: 3}}
	if p, err := waitroom.NewStore(s).OfferReleased(ctx, item, time.Minute, line, false); err != nil || p.Offered != 1 || p.Pool != 1 {
		t.Fatalf("offer: %+v %v", p, err)
	}
	// MySQL's stock is the two released units.
	if err := s.Warm(ctx, snap); err != nil {
		t.Fatal(err)
	}
	w := checkI9(t, s, item)
	left, _, _ := s.Stock(ctx, item)
	if left != 2 || w.Held() != 0 || w.Returned != 2 {
		t.Fatalf("after the warm: stock %d, waitlist %+v; want stock 2, nothing held, 2 returned", left, w)
	}
	if c := claim(t, s, item, 3, 1); c != stock.NoOffer {
		t.Fatalf("claim of an offer the warm took back: %s, want no_offer", c)
	}
}

// TestReleasedClaimGoesBackToTheWaitlist: a claim whose order is not taken
// (its publish failed, its ingress died: the reservation is released) is no
// longer claimed: within the offer's window its unit goes back to the same
// buyer's offer, so the buyer may retry; after it, to the pool and the next
// ticket. Any other reservation released while the item is sold out feeds
// the pool too, not whoever asks first. Before release.lua knew the
// waitlist, such a unit went to the stock and the claim stayed counted
// (faults TestWaitlistHandOffKilled: claimed 17, 16 orders).
func TestReleasedClaimGoesBackToTheWaitlist(t *testing.T) {
	t.Parallel()
	s := stock.New(testenv.Redis(t))
	w := waitroom.NewStore(s)
	ctx := context.Background()
	item, _, rids := soldOutQueued(t, s, 2)
	// User 1's order is not taken (ABORTED): sold out, so the pool gets it.
	if ok, err := s.Release(ctx, item, rids[0], stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if w := checkI9(t, s, item); w.Pool != 1 || w.In != 1 {
		t.Fatalf("after an ordinary release while sold out: %+v, want pool 1", w)
	}
	line := []waitroom.Candidate{{Position: 3, Ticket: fmt.Sprintf("%032x", 3), UserID: 3}, {Position: 4, Ticket: fmt.Sprintf("%032x", 4), UserID: 4}}
	// A window the steps below fit in even on a loaded machine; its end is
	// waited for by Redis' clock.
	if p, err := w.OfferReleased(ctx, item, time.Second, line, false); err != nil || p.Offered != 1 {
		t.Fatalf("offer: %+v %v", p, err)
	}
	claimRID := reqid.New(item, time.Now())
	if r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: 1, UserID: 3, Qty: 1, RequestID: claimRID, Now: time.Now(), Claim: true}); err != nil || r.Code != stock.Admitted {
		t.Fatalf("claim: %+v %v", r, err)
	}
	// The claim's publish fails within the window: the offer is 3's again.
	if ok, err := s.Release(ctx, item, claimRID, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
		t.Fatalf("release of the claim: %v %v", ok, err)
	}
	o, ok, _ := w.OfferOf(ctx, item, 3)
	if !ok || o.Position != 3 {
		t.Fatalf("3's offer after its claim was released: %+v %v, want it back", o, ok)
	}
	if w := checkI9(t, s, item); w.Claimed != 0 || w.Offers != 1 {
		t.Fatalf("after the claim's release: %+v, want not claimed, on offer", w)
	}
	retry := reqid.New(item, time.Now())
	if r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: item, Buckets: 1, UserID: 3, Qty: 1, RequestID: retry, Now: time.Now(), Claim: true}); err != nil || r.Code != stock.Admitted {
		t.Fatalf("the buyer's retry: %+v %v", r, err)
	}
	// Released again after the window: the pool, then the next ticket.
	untilRedisPasses(t, s, o.Expires)
	if ok, err := s.Release(ctx, item, retry, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
		t.Fatalf("release of the retry: %v %v", ok, err)
	}
	if _, ok, _ := w.OfferOf(ctx, item, 3); ok {
		t.Fatal("an offer past its window came back")
	}
	if w := checkI9(t, s, item); w.Pool != 1 || w.Claimed != 0 {
		t.Fatalf("after the late release: %+v, want pool 1", w)
	}
	if p, err := w.OfferReleased(ctx, item, time.Minute, line, false); err != nil || p.Offered != 1 || p.Cursor != 4 {
		t.Fatalf("offer to the next: %+v %v, want position 4", p, err)
	}
	if left, _, _ := s.Stock(ctx, item); left != 0 {
		t.Fatalf("stock %d, want 0: no released unit reached the stock", left)
	}
}
