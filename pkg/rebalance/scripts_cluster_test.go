//go:build cluster

package rebalance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The rebalancer's scripts on a Redis Cluster whose every shard lost its
// script cache (a restart, a failover to a replica that never ran them):
// Run's loadScripts caches all of lua/ on every shard, primaries and
// replicas, and with the caches flushed again a pass still takes the lease
// and drives a transfer whose buckets live on two primaries (each call's
// EVALSHA answered NOSCRIPT and EVAL ran it in that bucket's slot).
func TestClusterScriptsAfterFlush(t *testing.T) {
	e, cc := newClusterEnv(t)
	ctx := context.Background()

	shas := testenv.ScriptSHAs(t, "lua/*.lua")
	testenv.FlushScripts(t, cc, shas)
	if err := loadScripts(ctx, cc); err != nil {
		t.Fatal(err)
	}
	testenv.ExpectScriptsEverywhere(t, cc, shas)

	item := onTwoPrimaries(t, cc, func() int64 { return e.item(20, 2) })
	e.admit(item, 2, 1, 10) // bucket 1 sold out
	e.setWant(item, 1)
	testenv.FlushScripts(t, cc, shas)
	key := "fs:test:rebalance:lease:" + itoa(time.Now().UnixNano())
	t.Cleanup(func() { cc.Del(context.Background(), key) })
	r := e.rebalancer(Config{Interval: 10 * time.Millisecond, Lease: time.Minute, LeaseKey: key, Holder: "a"})
	if err := r.Pass(ctx); err != nil {
		t.Fatalf("pass after every shard lost its scripts: %v", err)
	}
	if holder := cc.Get(ctx, key).Val(); holder != "a" {
		t.Fatalf("lease holder = %q; want a", holder)
	}
	if st := e.settled(item); st[store.TransferDone] != 1 {
		t.Fatalf("transfers = %v; want one DONE", st)
	}
	s := e.conserved(item, 2, 20)
	if !slices.Equal(s.redis, []int64{5, 5}) {
		t.Fatalf("Redis after the pass = %v; want [5 5]", s.redis)
	}
}

// onTwoPrimaries creates items of 2 buckets with newItem until one has its
// buckets' slots on different primaries, and returns it.
func onTwoPrimaries(t *testing.T, cc *redis.ClusterClient, newItem func() int64) int64 {
	t.Helper()
	for range 100 {
		id := newItem()
		if primaryOfKey(t, cc, stock.BucketKeys(id, 0).Stock) != primaryOfKey(t, cc, stock.BucketKeys(id, 1).Stock) {
			return id
		}
	}
	t.Fatal("no item in 100 with its two buckets on two primaries")
	return 0
}

func primaryOfKey(t *testing.T, cc *redis.ClusterClient, key string) string {
	t.Helper()
	c, err := cc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return c.Options().Addr
}
