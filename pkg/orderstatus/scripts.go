package orderstatus

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The status cache's own scripts, one file per operation under lua/:
// storing a status (and announcing it), the pay's in-doubt marker, and the
// status poll's read of a request. They run on the writers' and the
// buyer's path, through stock.Store.Eval (PutStatuses: stock.RunBatch).
//
//go:embed lua/*.lua
var luaFS embed.FS

func mustScript(name string) *redis.Script {
	b, err := luaFS.ReadFile("lua/" + name)
	if err != nil {
		panic(fmt.Sprintf("orderstatus: embedded script %s: %v", name, err)) // build-time invariant
	}
	return redis.NewScript(string(b))
}

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
	for _, s := range []*redis.Script{statusPutScript, statusMarkScript, lookupScript} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("orderstatus: load script: %w", err)
		}
	}
	return nil
}
