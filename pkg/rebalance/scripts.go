package rebalance

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/luascript"

	"github.com/flashsale-dev/flashsale/pkg/lease"
)

// The rebalancer's own scripts (one file per operation, under lua/): the
// three steps of a transfer, the out and in steps of a waitlist transfer
// in their own (the lease's are pkg/lease's). Every one is safe to run again
// (the transfer steps keep their answer in a guard, the lease scripts
// compare the holder), so they are run with go-redis' Script.Run, retries
// and all: EVALSHA, then EVAL after NOSCRIPT (a restart or a failover),
// which caches the script on that node again. None is on the buyer's path,
// where pkg/stock makes "never sent" exact.
//
//go:embed lua/*.lua
var luaFS embed.FS

// scripts is every script of lua/, each named once, below.
var scripts = luascript.NewSet(luaFS, "rebalance")

var (
	transferOutScript = scripts.Must("transfer_out.lua")
	transferInScript  = scripts.Must("transfer_in.lua")
	transferCutScript = scripts.Must("transfer_cut.lua")
	waitlistOutScript = scripts.Must("waitlist_out.lua")
	waitlistInScript  = scripts.Must("waitlist_in.lua")
)

// loadScripts caches every script under lua/, and the lease's (pkg/lease),
// on Redis (on a Cluster, on every shard: go-redis'
// ClusterClient.ScriptLoad), so a pass after a restart does not pay for
// EVAL. Run calls it once at its start; it is an optimisation only,
// as NOSCRIPT is handled on every call.
func loadScripts(ctx context.Context, rdb redis.Scripter) error {
	return scripts.Load(ctx, rdb, lease.Scripts...)
}
