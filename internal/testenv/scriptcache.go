package testenv

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The Redis Cluster script-cache helpers of the packages that embed Lua
// scripts and test them on a Cluster (pkg/stock, pkg/orderstatus,
// pkg/rebalance, each under its lua/): after a restart or a failover a
// shard has none cached, and every call must still find its script.

// ScriptSHAs are the SHA1 digests, which EVALSHA names, of the scripts
// that glob (relative to the test's package directory, e.g. "lua/*.lua")
// matches; none is a failure.
func ScriptSHAs(t testing.TB, glob string) []string {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("testenv: scripts %s: %v %v", glob, files, err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h := sha1.Sum(b)
		out = append(out, hex.EncodeToString(h[:]))
	}
	return out
}

// CachedScripts counts, per shard (primaries and replicas), how many of
// shas its script cache holds.
func CachedScripts(t testing.TB, cc *redis.ClusterClient, shas []string) map[string]int {
	t.Helper()
	var mu sync.Mutex
	out := map[string]int{}
	err := cc.ForEachShard(context.Background(), func(ctx context.Context, c *redis.Client) error {
		ex, err := c.ScriptExists(ctx, shas...).Result()
		if err != nil {
			return err
		}
		n := 0
		for _, e := range ex {
			if e {
				n++
			}
		}
		mu.Lock()
		out[c.Options().Addr] = n
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatalf("testenv: script exists: %v", err)
	}
	return out
}

// FlushScripts empties every shard's script cache and checks that every
// primary and replica answered and holds none of shas, so the calls that
// follow must find NOSCRIPT. The cache is the test's until it ends
// (HoldScriptCache): no other test's flush empties it under its checks.
func FlushScripts(t testing.TB, cc *redis.ClusterClient, shas []string) {
	t.Helper()
	HoldScriptCache(t, cc)
	if err := cc.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatalf("testenv: script flush: %v", err)
	}
	c := CachedScripts(t, cc, shas)
	if len(c) < 2*ClusterSize {
		t.Fatalf("testenv: script caches of %d shards %v, want every primary and replica", len(c), c)
	}
	for addr, n := range c {
		if n != 0 {
			t.Fatalf("testenv: %s still caches %d scripts after SCRIPT FLUSH", addr, n)
		}
	}
}

// ExpectScriptsEverywhere fails the test unless every node of cc, replicas
// too, caches every script of shas: a load (or a NOSCRIPT retry) must have
// reached them all, so a failover finds them. Call it in a test that
// holds the cache (FlushScripts does), or another test's flush may empty
// it before the count.
func ExpectScriptsEverywhere(t testing.TB, cc *redis.ClusterClient, shas []string) {
	t.Helper()
	for addr, n := range CachedScripts(t, cc, shas) {
		if n != len(shas) {
			t.Errorf("%s caches %d of the %d scripts", addr, n, len(shas))
		}
	}
}
