package testenv

import (
	"context"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/lease"
)

// TestScriptCacheHoldExcludes: while one test holds a Redis deployment's
// script cache, another cannot take it, and can once the first released it.
func TestScriptCacheHoldExcludes(t *testing.T) {
	rdb := Redis(t)
	ctx := context.Background()
	second := "other/" + Suffix()
	t.Run("first", func(t *testing.T) {
		HoldScriptCache(t, rdb)
		HoldScriptCache(t, rdb) // again in the same test: already its own
		if ok, err := lease.Hold(ctx, rdb, scriptHoldKey, second, scriptHoldTTL); err != nil || ok {
			t.Fatalf("another holder took the cache while it was held: %v %v", ok, err)
		}
	})
	ok, err := lease.Hold(ctx, rdb, scriptHoldKey, second, scriptHoldTTL)
	if err != nil || !ok {
		t.Fatalf("the cache stayed held after its test ended: %v %v", ok, err)
	}
	if err := lease.Drop(ctx, rdb, scriptHoldKey, second); err != nil {
		t.Fatal(err)
	}
}
