// Package luascript is how a feature package keeps its Redis Lua: one file
// per operation in the package's own lua/ folder, embedded with it, parsed
// when the package initialises, and loaded on the servers at start-up.
//
// Every package that owns scripts (pkg/stock, pkg/waitroom, pkg/orderstatus,
// pkg/stockchange, pkg/rebalance, pkg/lease) wrote these two functions out
// for itself; they are one here. A package declares its scripts through its
// Set, so the list its start-up load reads is the list it declared, not one
// kept again by hand beside it. It imports nothing of the module, so the
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

// A Set is one owner package's scripts: each one made by Must from the
// package's embedded lua/ files, and all of them loaded by Load. A package
// names its scripts once, where it declares them, so its start-up load can
// never miss one added later.
type Set struct {
	fsys    fs.FS
	owner   string
	scripts []*redis.Script
}

// NewSet returns the empty set of owner's scripts, read from fsys (the
// package's embedded files, lua/ inside).
func NewSet(fsys fs.FS, owner string) *Set { return &Set{fsys: fsys, owner: owner} }

// Must returns the script lua/name of the set's files (Must above: a
// missing file panics) and adds it to the set. It is meant for package
// variables, set up before anything runs; it is not safe for concurrent use.
func (s *Set) Must(name string) *redis.Script {
	sc := Must(s.fsys, s.owner, name)
	s.scripts = append(s.scripts, sc)
	return sc
}

// Load loads every script of the set, then extra (another package's scripts
// the owner also runs, as pkg/rebalance runs pkg/lease's), as Load does.
func (s *Set) Load(ctx context.Context, rdb redis.Scripter, extra ...*redis.Script) error {
	return Load(ctx, rdb, s.owner, append(append([]*redis.Script(nil), s.scripts...), extra...)...)
}
