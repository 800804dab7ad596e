package stock

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// scripts is every script of lua/, each named once, below.
var scripts = luascript.NewSet(luaFS, "stock")

// The scripts run by EVALSHA; go-redis falls back to EVAL on NOSCRIPT (after
// a Redis restart or failover), which also loads them again.
var (
	admitScript     = scripts.Must("admit.lua")
	releaseScript   = scripts.Must("release.lua")
	settleScript    = scripts.Must("settle.lua")
	restoreScript   = scripts.Must("restore.lua")
	warmScript      = scripts.Must("warm.lua")
	ackScript       = scripts.Must("ack.lua")
	wantLowerScript = scripts.Must("want_lower.lua")
)

// LoadScripts loads every script under lua/ (scripts: those above and
// relayout.go's) once at start-up so the first requests do not pay for
// EVAL; the cluster test checks each shard caches them all after a NOSCRIPT
// retry. It is an optimisation: NOSCRIPT is handled on every call. The
// rebalancer's scripts are its own (pkg/rebalance, lua/), and it loads them
// itself; the waiting room's are pkg/waitroom's, the status cache's
// pkg/orderstatus's and the stock changes' pkg/stockchange's (LoadScripts
// there).
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	return scripts.Load(ctx, rdb)
}
