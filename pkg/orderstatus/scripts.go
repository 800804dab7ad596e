package orderstatus

import (
	"context"
	"embed"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/luascript"
)

// The status cache's own scripts, one file per operation under lua/:
// storing a status (and announcing it), the pay's in-doubt marker, and the
// status poll's read of a request. They run on the writers' and the
// buyer's path, through stock.Store.Eval (PutStatuses: stock.RunBatch).
//
//go:embed lua/*.lua
var luaFS embed.FS

// scripts is every script of lua/, each named once, below.
var scripts = luascript.NewSet(luaFS, "orderstatus")

var (
	statusPutScript  = scripts.Must("status_put.lua")
	statusMarkScript = scripts.Must("status_mark.lua")
	lookupScript     = scripts.Must("lookup.lua")
)

// LoadScripts loads the status cache's scripts once at start-up (on a
// Cluster, on every shard), so the first polls and writes do not pay for
// EVAL; PutStatuses loads them again after a NOSCRIPT. An optimisation:
// NOSCRIPT is handled on every call.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	return scripts.Load(ctx, rdb)
}
