package stock

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

func mustScript(name string) *redis.Script { return luascript.Must(luaFS, "stock", name) }

// The scripts run by EVALSHA; go-redis falls back to EVAL on NOSCRIPT (after
// a Redis restart or failover), which also loads them again.
var (
	admitScript     = mustScript("admit.lua")
	releaseScript   = mustScript("release.lua")
	settleScript    = mustScript("settle.lua")
	restoreScript   = mustScript("restore.lua")
	warmScript      = mustScript("warm.lua")
	ackScript       = mustScript("ack.lua")
	wantLowerScript = mustScript("want_lower.lua")
)

// allScripts is every script under lua/ (the cluster test checks each shard
// caches them all after a NOSCRIPT retry). The rebalancer's scripts are its
// own (pkg/rebalance, lua/), and it loads them itself; the waiting
// room's are pkg/waitroom's, the status cache's pkg/orderstatus's and the
// stock changes' pkg/stockchange's (LoadScripts there).
var allScripts = []*redis.Script{admitScript, releaseScript, settleScript, restoreScript, warmScript, ackScript,
	retireScript, wantLowerScript}

// LoadScripts loads every script once at start-up so the first requests do
// not pay for EVAL. It is an optimisation: NOSCRIPT is handled on every call.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	return luascript.Load(ctx, rdb, "stock", allScripts...)
}
