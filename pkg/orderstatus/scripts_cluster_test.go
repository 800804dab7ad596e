//go:build cluster

package orderstatus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// The status cache's batch on a Redis Cluster whose every shard lost its
// script cache, as after a restart or a failover to a replica that never
// ran them, for items on every primary: PutStatuses' pipeline, which the
// cluster client splits per node, so any node's part may answer NOSCRIPT
// (stock.RunBatch); it loads the scripts on every shard and sends again
// the calls that met NOSCRIPT (pkg/stock's scripts_cluster_test.go does the
// same for the ledger's batches).
func TestClusterPutStatusesAfterFlushOnEveryShard(t *testing.T) {
	cc := testenv.RedisCluster(t)
	s := orderstatus.NewStore(stock.New(cc))
	ctx := context.Background()
	items := testenv.ItemsOnEveryPrimary(t, cc)
	t.Logf("items by primary: %v", items)

	flushScripts(t, cc)
	rids := map[int64]string{}
	var sts []orderstatus.StatusEntry
	for _, id := range items {
		rids[id] = reqid.New(id, time.Now())
		sts = append(sts, orderstatus.StatusEntry{ItemID: id, RequestID: rids[id], Rank: orderstatus.RankFinal, JSON: []byte(fmt.Sprintf(`{"item":%d}`, id))})
	}
	if err := s.PutStatuses(ctx, sts); err != nil {
		t.Fatalf("put statuses after flush: %v", err)
	}
	for _, id := range items {
		if b, ok, err := s.GetStatus(ctx, id, rids[id]); err != nil || !ok || string(b) != fmt.Sprintf(`{"item":%d}`, id) {
			t.Fatalf("item %d: status %q %v %v", id, b, ok, err)
		}
	}
	testenv.ExpectScriptsEverywhere(t, cc, scriptSHAs(t))
}

// scriptSHAs are the digests of the embedded scripts (lua/*.lua), which
// EVALSHA names.
func scriptSHAs(t *testing.T) []string { return testenv.ScriptSHAs(t, "lua/*.lua") }

// flushScripts empties every shard's script cache and checks it is empty,
// so the calls that follow must find NOSCRIPT.
func flushScripts(t *testing.T, cc *redis.ClusterClient) { testenv.FlushScripts(t, cc, scriptSHAs(t)) }
