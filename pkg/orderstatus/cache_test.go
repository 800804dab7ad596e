package orderstatus_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

func TestStatusNeverMovesBackwards(t *testing.T) {
	t.Parallel()
	s := orderstatus.NewStore(stock.New(testenv.Redis(t)))
	ctx := context.Background()
	item := testenv.ItemID()
	rid := reqid.New(item, time.Now())
	for _, step := range []struct {
		rank orderstatus.StatusRank
		body string
	}{{orderstatus.RankUnpaid, "unpaid"}, {orderstatus.RankFinal, "paid"}, {orderstatus.RankUnpaid, "unpaid-late"}} {
		if err := s.PutStatus(ctx, item, rid, step.rank, []byte(step.body)); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := s.GetStatus(ctx, item, rid)
	if err != nil || !ok || string(got) != "paid" {
		t.Fatalf("status %q %v %v, want paid", got, ok, err)
	}
}

// scriptCounter counts the scripts a client sends (EVALSHA and EVAL, alone
// or in pipelines): what a step costs Redis in calls.
type scriptCounter struct{ n atomic.Int64 }

func (c *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}
func (c *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}
func (c *scriptCounter) count(cmd redis.Cmder) {
	if n := cmd.Name(); n == "evalsha" || n == "eval" {
		c.n.Add(1)
	}
}

// TestPutStatusesOneScriptPerBucket: a consumer batch's statuses are stored
// with one script call per item bucket, not one per request (issue 42: the
// per-request status_put.lua calls were one of the eight scripts an order
// cost Redis), and each is stored and announced as alone: the newer status
// kept, the older refused, every stored one announced with its value.
func TestPutStatusesOneScriptPerBucket(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	var calls scriptCounter
	rdb.AddHook(&calls)
	s := orderstatus.NewStore(stock.New(rdb))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := testenv.ItemID(), testenv.ItemID()
	sub, err := s.SubscribeStatuses(ctx, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	final := reqid.New(a, time.Now())
	if err := s.PutStatus(ctx, a, final, orderstatus.RankFinal, []byte(`{"s":"paid"}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sub.Next(ctx); err != nil {
		t.Fatal(err)
	}
	calls.n.Store(0)
	var entries []orderstatus.StatusEntry
	var want []string
	for i := range 40 {
		rid := reqid.New(a, time.Now())
		js := fmt.Sprintf(`{"n":%d}`, i)
		entries = append(entries, orderstatus.StatusEntry{ItemID: a, RequestID: rid, Rank: orderstatus.RankUnpaid, JSON: []byte(js)})
		want = append(want, rid+" "+fmt.Sprint(int(orderstatus.RankUnpaid))+"|"+js)
	}
	entries = append(entries,
		orderstatus.StatusEntry{ItemID: a, RequestID: final, Rank: orderstatus.RankUnpaid, JSON: []byte(`{"s":"late"}`)},
		orderstatus.StatusEntry{ItemID: b, RequestID: reqid.New(b, time.Now()), Rank: orderstatus.RankUnpaid, JSON: []byte(`{}`)},
		orderstatus.StatusEntry{ItemID: b, RequestID: reqid.NewIn(b, 2, time.Now()), Rank: orderstatus.RankUnpaid, JSON: []byte(`{}`)})
	if err := s.PutStatuses(ctx, entries); err != nil {
		t.Fatal(err)
	}
	if n := calls.n.Load(); n != 3 {
		t.Fatalf("%d script calls for 43 statuses in 3 item buckets, want 3", n)
	}
	for _, e := range entries {
		got, ok, err := s.GetStatus(ctx, e.ItemID, e.RequestID)
		want := string(e.JSON)
		if e.RequestID == final {
			want = `{"s":"paid"}`
		}
		if err != nil || !ok || string(got) != want {
			t.Fatalf("%s: status %q %v %v, want %s", e.RequestID, got, ok, err, want)
		}
	}
	var got []string
	for range want {
		a, gap, err := sub.Next(ctx)
		if err != nil || gap {
			t.Fatalf("next: gap %v err %v after %d announcements", gap, err, len(got))
		}
		got = append(got, a.RequestID+" "+string(a.Status))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("announced %q,\nwant %q", got, want)
	}
}

// TestPutStatusesSettlesOnlyTheMarked: an entry marked Settle loses its
// reservation in the call that caches its status, also when a newer status
// is kept; an unmarked one (a rejection someone else releases, with its
// stock) keeps it, in the same bucket and the same call.
func TestPutStatusesSettlesOnlyTheMarked(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	var calls scriptCounter
	rdb.AddHook(&calls)
	s := orderstatus.NewStore(stock.New(rdb))
	ctx := context.Background()
	item := testenv.ItemID()
	order, kept, other := reqid.New(item, time.Now()), reqid.New(item, time.Now()), reqid.New(item, time.Now())
	res := stock.KeysOf(item).Reservations
	for _, rid := range []string{order, kept, other} {
		if err := rdb.HSet(ctx, res, rid, "7:1:0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { rdb.Del(context.Background(), res) })
	if err := s.PutStatus(ctx, item, kept, orderstatus.RankFinal, []byte(`{"s":"paid"}`)); err != nil {
		t.Fatal(err)
	}
	calls.n.Store(0)
	if err := s.PutStatuses(ctx, []orderstatus.StatusEntry{
		{ItemID: item, RequestID: order, Rank: orderstatus.RankUnpaid, JSON: []byte(`{"s":"unpaid"}`), Settle: true},
		{ItemID: item, RequestID: kept, Rank: orderstatus.RankUnpaid, JSON: []byte(`{"s":"late"}`), Settle: true},
		{ItemID: item, RequestID: other, Rank: orderstatus.RankFinal, JSON: []byte(`{"s":"rejected"}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if n := calls.n.Load(); n != 1 {
		t.Fatalf("%d script calls, want 1: the settle rides in the statuses' call", n)
	}
	for rid, want := range map[string]struct {
		held   bool
		status string
	}{order: {false, `{"s":"unpaid"}`}, kept: {false, `{"s":"paid"}`}, other: {true, `{"s":"rejected"}`}} {
		lk, err := s.LookupRequest(ctx, item, rid)
		if err != nil {
			t.Fatal(err)
		}
		if lk.HasReservation != want.held || string(lk.Status) != want.status {
			t.Fatalf("%s: reservation held %v, status %s; want held %v, status %s", rid, lk.HasReservation, lk.Status, want.held, want.status)
		}
	}
}
