package stockchange

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The stock changes' own script, one file per operation under lua/: one
// bucket's part of a restock or withdraw (stock_change.lua). It is safe to
// run again (its guard keeps the answer), so it is run with go-redis'
// Script.Run, retries and all: EVALSHA, then EVAL after NOSCRIPT. It is not
// on the buyer's path, where pkg/stock makes "never sent" exact.
//
//go:embed lua/*.lua
var luaFS embed.FS

func mustScript(name string) *redis.Script {
	b, err := luaFS.ReadFile("lua/" + name)
	if err != nil {
		panic(fmt.Sprintf("stockchange: embedded script %s: %v", name, err)) // build-time invariant
	}
	return redis.NewScript(string(b))
}

var stockChangeScript = mustScript("stock_change.lua")

// LoadScripts loads the stock changes' script once at start-up (on a
// Cluster, on every shard), so the first change does not pay for EVAL. An
// optimisation: NOSCRIPT is handled on every call.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	for _, s := range []*redis.Script{stockChangeScript} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("stockchange: load script: %w", err)
		}
	}
	return nil
}
