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

func mustScript(name string) *redis.Script { return luascript.Must(luaFS, "orderstatus", name) }

var (
	statusPutScript  = mustScript("status_put.lua")
	statusMarkScript = mustScript("status_mark.lua")
	lookupScript     = mustScript("lookup.lua")
)

// LoadScripts loads the status cache's scripts once at start-up (on a
// Cluster, on every shard), so the first polls and writes do not pay for
// EVAL; PutStatuses loads them again after a NOSCRIPT. An optimisation:
// NOSCRIPT is handled on every call.
func LoadScripts(ctx context.Context, rdb redis.Scripter) error {
	return luascript.Load(ctx, rdb, "orderstatus", statusPutScript, statusMarkScript, lookupScript)
}
