package stockchange

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/luascript"
)

// The stock changes' own script, one file per operation under lua/: one
// bucket's part of a restock or withdraw (stock_change.lua). It is safe to
// run again (its guard keeps the answer), so it is run with go-redis'
// Script.Run, retries and all: EVALSHA, then EVAL after NOSCRIPT. It is not
// on the buyer's path, where pkg/stock makes "never sent" exact.
//
//go:embed lua/*.lua
var luaFS embed.FS

// scripts is every script of lua/, each named once, below.
var scripts = luascript.NewSet(luaFS, "stockchange")

var stockChangeScript = scripts.Must("stock_change.lua")

// LoadScripts loads the stock changes' script once at start-up (on a
// Cluster, on every shard), so the first change does not pay for EVAL. An
// optimisation: NOSCRIPT is handled on every call.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	return scripts.Load(ctx, rdb)
}
