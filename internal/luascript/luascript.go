// Package luascript is how a feature package keeps its Redis Lua: one file
// per operation in the package's own lua/ folder, embedded with it, parsed
// when the package initialises, and loaded on the servers at start-up.
//
// Every package that owns scripts (pkg/stock, pkg/waitroom, pkg/orderstatus,
// pkg/stockchange, pkg/rebalance, pkg/lease) wrote these two functions out
// for itself; they are one here. It imports nothing of the module, so the
// lowest packages (pkg/lease) may use it.
package luascript

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/redis/go-redis/v9"
)

// Must returns the script lua/name of fsys, the owner package's embedded
// files. A missing file is a build-time bug, not a runtime condition, so it
// panics, naming owner.
func Must(fsys fs.FS, owner, name string) *redis.Script {
	b, err := fs.ReadFile(fsys, "lua/"+name)
	if err != nil {
		panic(fmt.Sprintf("%s: embedded script %s: %v", owner, name, err)) // build-time invariant
	}
	return redis.NewScript(string(b))
}

// Load loads scripts on rdb (on a Cluster, on every shard) at start-up, so
// the first calls do not pay for EVAL. An optimisation: go-redis falls back
// to EVAL on NOSCRIPT (after a restart or a failover) on every call.
func Load(ctx context.Context, rdb redis.Scripter, owner string, scripts ...*redis.Script) error {
	for _, s := range scripts {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return fmt.Errorf("%s: load script: %w", owner, err)
		}
	}
	return nil
}
