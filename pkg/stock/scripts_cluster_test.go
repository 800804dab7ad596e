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

// The scripts on a Redis Cluster whose every shard lost its script cache,
// as after a restart or a failover to a replica that never ran them, for
// items on every primary: the single calls (Script.Run: EVALSHA, then EVAL
// on NOSCRIPT) and the batch calls of batch.go, whose pipeline the cluster
// client splits per node, so any node's part may answer NOSCRIPT; they load
// the scripts on every shard and send again the calls that met NOSCRIPT.
// The status cache's batch is pkg/orderstatus's (its scripts_cluster_test.go).
func TestClusterScriptsAfterFlushOnEveryShard(t *testing.T) {
	cc := testenv.RedisCluster(t)
	s := stock.New(cc)
	ctx := context.Background()
	items := testenv.ItemsOnEveryPrimary(t, cc)
	t.Logf("items by primary: %v", items)

	// Single calls: warm, admit and release each find no script.
	flushScripts(t, cc)
	for _, id := range items {
		testenv.WarmAt(t, s, id, 10)
	}
	flushScripts(t, cc)
	held := map[int64]string{} // item -> the request user 1 holds
	for _, id := range items {
		r := admitAt(t, s, id, 1, 2)
		if r.Code != stock.Admitted || r.StockLeft != 8 {
			t.Fatalf("item %d on %s: admit after flush: %+v", id, testenv.PrimaryOf(t, cc, id), r)
		}
		held[id] = r.RequestID
	}
	flushScripts(t, cc)
	released := map[int64]string{}
	for _, id := range items {
		rid := reqid.New(id, time.Now())
		if r, err := s.Admit(ctx, stock.AdmitRequest{ItemID: id, UserID: 2, Qty: 1, RequestID: rid, Now: time.Now()}); err != nil || r.Code != stock.Admitted {
			t.Fatalf("item %d: admit user 2: %+v %v", id, r, err)
		}
		released[id] = rid
	}
	flushScripts(t, cc)
	for id, rid := range released {
		if ok, err := s.Release(ctx, id, rid, stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}); err != nil || !ok {
			t.Fatalf("item %d: release after flush: %v %v", id, ok, err)
		}
	}
	for _, id := range items {
		expectState(t, s, id, 8, 1, 1)
	}

	// Batch calls, one pipeline over every primary.
	flushScripts(t, cc)
	var rel []stock.ReleaseEntry
	for id, rid := range held {
		rel = append(rel, stock.ReleaseEntry{ItemID: id, RequestID: rid, Options: stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}})
	}
	if err := s.ReleaseMany(ctx, rel); err != nil {
		t.Fatalf("release many after flush: %v", err)
	}
	for _, id := range items {
		expectState(t, s, id, 10, 0, 0)
	}
	testenv.ExpectScriptsEverywhere(t, cc, scriptSHAs(t))

	flushScripts(t, cc)
	var rest []stock.RestoreEntry
	for _, id := range items {
		rest = append(rest, stock.RestoreEntry{ItemID: id, RequestID: reqid.New(id, time.Now()), Qty: 1})
	}
	res, err := s.RestoreMany(ctx, rest)
	if err != nil {
		t.Fatalf("restore many after flush: %v", err)
	}
	for i, r := range res {
		if r != stock.RestoreApplied {
			t.Errorf("restore of item %d: %d, want applied", rest[i].ItemID, r)
		}
	}
	for _, id := range items {
		expectState(t, s, id, 11, 0, 0)
	}

	// One primary lost its scripts (it failed over), the others did not:
	// their parts of the pipeline ran, and the resend after NOSCRIPT must
	// not give their qty back twice (restore.lua's guard).
	var flushed string
	for primary := range items {
		flushed = primary
		break
	}
	err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		if c.Options().Addr != flushed {
			return nil
		}
		return c.ScriptFlush(ctx).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	rest = rest[:0]
	for _, id := range items {
		rest = append(rest, stock.RestoreEntry{ItemID: id, RequestID: reqid.New(id, time.Now()), Qty: 1})
	}
	res, err = s.RestoreMany(ctx, rest)
	if err != nil {
		t.Fatalf("restore many after %s alone flushed: %v", flushed, err)
	}
	t.Logf("restore results with only %s flushed: %v (each 1: applied once, counted once; batch_cluster_test.go checks it)", flushed, res)
	for _, id := range items {
		expectState(t, s, id, 12, 0, 0)
	}
}

// admitAt admits user for qty of item and returns the verdict with the
// request id it used in RequestID.
func admitAt(t *testing.T, s *stock.Store, id, user int64, qty int) stock.AdmitResult {
	t.Helper()
	rid := reqid.New(id, time.Now())
	r, err := s.Admit(context.Background(), stock.AdmitRequest{ItemID: id, UserID: user, Qty: qty, RequestID: rid, Now: time.Now()})
	if err != nil {
		t.Fatalf("admit item %d: %v", id, err)
	}
	r.RequestID = rid
	return r
}

func expectState(t *testing.T, s *stock.Store, id, stockLeft, pending, buyers int64) {
	t.Helper()
	st, err := s.ReadState(context.Background(), id)
	if err != nil || !st.Warmed || st.Stock != stockLeft || st.Pending != pending || st.Buyers != buyers {
		t.Fatalf("item %d: state %+v %v, want stock %d, %d pending, %d buyers", id, st, err, stockLeft, pending, buyers)
	}
}

// scriptSHAs are the digests of the embedded scripts (lua/*.lua), which
// EVALSHA names.
func scriptSHAs(t *testing.T) []string { return testenv.ScriptSHAs(t, "lua/*.lua") }

// flushScripts empties every shard's script cache and checks it is empty,
// so the calls that follow must find NOSCRIPT.
func flushScripts(t *testing.T, cc *redis.ClusterClient) { testenv.FlushScripts(t, cc, scriptSHAs(t)) }
