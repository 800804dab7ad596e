package lease

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/luascript"
)

//go:embed lua/*.lua
var luaFS embed.FS

// scripts is every script of lua/, each named once, below.
var scripts = luascript.NewSet(luaFS, "lease")

var (
	holdScript = scripts.Must("hold.lua")
	dropScript = scripts.Must("drop.lua")
)

// Scripts are the lease's scripts, for a caller that loads its scripts on
// Redis up front.
var Scripts = []*redis.Script{holdScript, dropScript}

// Hold takes key for holder for ttl when nobody holds it, or extends it
// when holder does, and reports whether holder holds it: one script
// (lua/hold.lua). A GET then a PEXPIRE from the client would let a lease
// expire and be taken between the two, and the old holder then extend the
// new one's.
func Hold(ctx context.Context, rdb redis.Scripter, key, holder string, ttl time.Duration) (bool, error) {
	n, err := holdScript.Run(ctx, rdb, []string{key}, holder, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("lease: hold %s: %w", key, err)
	}
	return n == 1, nil
}

// Drop gives key up if holder still holds it (lua/drop.lua), so another
// replica need not wait for it to expire.
func Drop(ctx context.Context, rdb redis.Scripter, key, holder string) error {
	if err := dropScript.Run(ctx, rdb, []string{key}, holder).Err(); err != nil {
		return fmt.Errorf("lease: drop %s: %w", key, err)
	}
	return nil
}

// Holder is a name for this process in a lease: host, pid and a random
// suffix, so two processes never share one.
func Holder() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Current reads key's holder ("" when nobody holds it): for an operator's
// view, never for a decision (it may change the moment after).
func Current(ctx context.Context, rdb redis.Cmdable, key string) (string, error) {
	v, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("lease: read %s: %w", key, err)
	}
	return v, nil
}
