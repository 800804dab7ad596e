//go:build cluster

package stock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// One primary lost its scripts (it failed over to a replica that never ran
// them), the others kept theirs. A restore batch spread over every primary
// runs on the others at the first send and answers NOSCRIPT only on that
// one. The reaper counts what RestoreMany reports applied
// (flashsale_restores_redis_total), so each restore must be reported
// applied exactly once: resending the whole pipeline made the others' second
// copies answer "seen" and the count came out short, though the stock was
// right (restore.lua's guard).
func TestClusterRestoreManyCountsEachOnceWhenOneShardLostItsScripts(t *testing.T) {
	cc := testenv.RedisCluster(t)
	s := stock.New(cc)
	ctx := context.Background()
	items := testenv.ItemsOnEveryPrimary(t, cc)
	for _, id := range items {
		testenv.WarmAt(t, s, id, 10)
	}
	if err := stock.LoadScripts(ctx, cc); err != nil {
		t.Fatal(err)
	}
	var flushed string
	for primary := range items {
		flushed = primary
		break
	}
	flushOne(t, cc, flushed)

	// Three restores per item, so each node's part of the pipeline holds
	// several commands.
	var entries []stock.RestoreEntry
	for range 3 {
		for _, id := range items {
			entries = append(entries, stock.RestoreEntry{ItemID: id, RequestID: reqid.New(id, time.Now()), Qty: 1})
		}
	}
	res, err := s.RestoreMany(ctx, entries)
	if err != nil {
		t.Fatalf("restore many with only %s flushed: %v", flushed, err)
	}
	applied := 0
	for i, r := range res {
		if r == stock.RestoreApplied {
			applied++
		} else {
			t.Errorf("restore %d of item %d on %s: %d, want %d (applied by this call)",
				i, entries[i].ItemID, testenv.PrimaryOf(t, cc, entries[i].ItemID), r, stock.RestoreApplied)
		}
	}
	if applied != len(entries) {
		t.Errorf("RestoreMany reported %d of %d restores applied with only %s's scripts flushed", applied, len(entries), flushed)
	}
	for _, id := range items {
		expectState(t, s, id, 13, 0, 0)
	}

	// The same batch again is all "seen": nothing given back twice.
	flushOne(t, cc, flushed)
	res, err = s.RestoreMany(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r != stock.RestoreSeen {
			t.Errorf("repeat of restore %d: %d, want %d", i, r, stock.RestoreSeen)
		}
	}
	for _, id := range items {
		expectState(t, s, id, 13, 0, 0)
	}
}

// flushOne empties the script cache of the primary at addr only.
func flushOne(t *testing.T, cc *redis.ClusterClient, addr string) {
	t.Helper()
	testenv.HoldScriptCache(t, cc)
	found := false
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		if c.Options().Addr != addr {
			return nil
		}
		found = true
		return c.ScriptFlush(ctx).Err()
	})
	if err != nil || !found {
		t.Fatalf("script flush on %s: %v (found %v)", addr, err, found)
	}
}
