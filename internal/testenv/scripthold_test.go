package testenv

import (
	"context"
	"testing"
)

// TestScriptCacheHoldExcludes: while one test holds a Redis deployment's
// script cache, another cannot take it, and can once the first released it.
func TestScriptCacheHoldExcludes(t *testing.T) {
	rdb := Redis(t)
	ctx := context.Background()
	var second string
	t.Run("first", func(t *testing.T) {
		HoldScriptCache(t, rdb)
		HoldScriptCache(t, rdb) // again in the same test: already its own
		second = "other/" + Suffix()
		if ok, err := tryHoldScripts(ctx, rdb, second); err != nil || ok {
			t.Fatalf("another holder took the cache while it was held: %v %v", ok, err)
		}
	})
	ok, err := tryHoldScripts(ctx, rdb, second)
	if err != nil || !ok {
		t.Fatalf("the cache stayed held after its test ended: %v %v", ok, err)
	}
	if err := releaseHold.Run(ctx, rdb, []string{scriptHoldKey}, second).Err(); err != nil {
		t.Fatal(err)
	}
}
