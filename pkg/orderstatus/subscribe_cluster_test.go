//go:build cluster

package orderstatus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// On a Redis Cluster, status_put.lua's SPUBLISH runs on the shard of the
// status key (the channel carries the same hash tag, so the script may
// publish it) and SubscribeStatuses' SSUBSCRIBE lands on that shard: a
// subscriber per item on every primary hears its own request ids from one
// batch pipeline the client splits per node, and nothing of the others.
func TestClusterStatusAnnouncements(t *testing.T) {
	cc := testenv.RedisCluster(t)
	s := orderstatus.NewStore(stock.New(cc))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	items := testenv.ItemsOnEveryPrimary(t, cc)
	subs := map[int64]*orderstatus.StatusSubscription{}
	var entries []orderstatus.StatusEntry
	for _, id := range items {
		sub, err := s.SubscribeStatuses(ctx, id, 0)
		if err != nil {
			t.Fatalf("item %d on %s: subscribe: %v", id, testenv.PrimaryOf(t, cc, id), err)
		}
		defer sub.Close()
		subs[id] = sub
		entries = append(entries, orderstatus.StatusEntry{ItemID: id, RequestID: fmt.Sprint("batch-", id), Rank: orderstatus.RankUnpaid, JSON: []byte(`{}`)})
	}
	if err := s.PutStatuses(ctx, entries); err != nil {
		t.Fatalf("put statuses: %v", err)
	}
	for _, id := range items {
		if err := s.PutStatus(ctx, id, fmt.Sprint("single-", id), orderstatus.RankFinal, []byte(`{}`)); err != nil {
			t.Fatalf("item %d: put status: %v", id, err)
		}
	}
	// A pipeline re-sent after a NOSCRIPT on one node runs the script
	// twice where it had not failed: an announcement may come twice, which
	// only wakes a waiter to read again.
	for _, id := range items {
		want := map[string]bool{fmt.Sprint("batch-", id): true, fmt.Sprint("single-", id): true}
		for len(want) > 0 {
			a, gap, err := subs[id].Next(ctx)
			rid := a.RequestID
			if err != nil || gap {
				t.Fatalf("item %d on %s: next: gap %v, err %v; still expecting %v", id, testenv.PrimaryOf(t, cc, id), gap, err, want)
			}
			if rid != fmt.Sprint("batch-", id) && rid != fmt.Sprint("single-", id) {
				t.Fatalf("item %d: announced %q, another item's request", id, rid)
			}
			delete(want, rid)
		}
	}
}
