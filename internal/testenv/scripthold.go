package testenv

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/lease"
)

// scriptHoldKey is the lease on a Redis deployment whose holder owns its
// script cache (HoldScriptCache).
const scriptHoldKey = "fs:test:script-cache-hold"

// scriptHoldTTL bounds a hold whose test died without its cleanup: the
// next holder waits at most this long.
const scriptHoldTTL = 2 * time.Minute

// held is the tests holding a script cache, so a test that flushes more
// than once takes the hold once.
var held sync.Map // testing.TB -> struct{}

// HoldScriptCache makes rdb's script cache this test's until the test
// ends, waiting while another test holds it. SCRIPT FLUSH empties the
// cache for every client of the servers, and make test runs packages as
// parallel processes: a test that flushes the cache and then counts what
// it holds (FlushScripts, ExpectScriptsEverywhere) failed when another
// package's test flushed it in between (cold run 32: pkg/stock's flush
// emptied 127.0.0.1:7001 between pkg/orderstatus's PutStatuses and its
// check). The hold is a pkg/lease lease on rdb itself, so it excludes
// tests of other processes as well as of this one; tests that only run
// scripts need none (go-redis sends EVAL again on NOSCRIPT). The lease's
// own scripts are not among those the checks count.
func HoldScriptCache(t testing.TB, rdb redis.UniversalClient) {
	t.Helper()
	if _, ok := held.LoadOrStore(t, struct{}{}); ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptHoldTTL+30*time.Second)
	defer cancel()
	holder := t.Name() + "/" + Suffix()
	if err := holdScripts(ctx, rdb, holder); err != nil {
		held.Delete(t)
		t.Fatalf("testenv: hold the script cache: %v", err)
	}
	t.Cleanup(func() {
		held.Delete(t)
		if err := lease.Drop(context.Background(), rdb, scriptHoldKey, holder); err != nil {
			t.Errorf("testenv: release the script cache: %v", err)
		}
	})
}

// holdScripts takes the hold for holder, polling every 20 ms while another
// holds it, until ctx ends.
func holdScripts(ctx context.Context, rdb redis.UniversalClient, holder string) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := lease.Hold(ctx, rdb, scriptHoldKey, holder, scriptHoldTTL)
		if err != nil || ok {
			return err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			other, _ := lease.Current(context.Background(), rdb, scriptHoldKey)
			return errors.Join(ctx.Err(), errors.New("held by "+other))
		}
	}
}
