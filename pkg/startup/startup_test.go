package startup_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/pkg/startup"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/schema"
)

func checks(logs *testenv.LogBuffer, mode string, schemaFS fs.FS) startup.Checks {
	return startup.Checks{Timeout: time.Second, Server: config.ServerChecks{Mode: mode}, Schema: schemaFS,
		Log: slog.New(slog.NewTextHandler(logs, nil))}
}

// TestMySQLWaitsThroughAnOutage: a deployable started while MySQL is down
// (a failover) waits and says so, and goes on once MySQL answers.
func TestMySQLWaitsThroughAnOutage(t *testing.T) {
	_, dsn := testenv.MySQL(t)
	fd := testenv.NewFaultDialer()
	var dials atomic.Int64 // refused while cut: one per attempt of the check
	db := testenv.MySQLVia(t, dsn, func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		return fd.DialContext(ctx, "tcp", addr)
	})
	fd.Cut()
	var logs testenv.LogBuffer
	done := make(chan error, 1)
	go func() { done <- checks(&logs, "enforce", schema.FS).MySQL(context.Background(), db) }()
	// The outage lasts while the check tries again (every RetryEvery).
	testenv.Eventually(t, 10*startup.RetryEvery, 10*time.Millisecond, func() bool { return dials.Load() >= 2 },
		"the check did not try MySQL again during the outage")
	select {
	case err := <-done:
		t.Fatalf("returned during the outage: %v, want it to wait", err)
	default:
	}
	fd.Restore()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after MySQL came back: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting 10s after MySQL came back")
	}
	if !strings.Contains(logs.String(), "waiting for mysql") {
		t.Fatalf("logs %q, want a 'waiting for mysql' line", logs.String())
	}
}

// TestMySQLRefusesASchemaOlderThanTheBinary: the binary embeds a migration
// the database has not had; it stops, naming it and saying to run setup.
func TestMySQLRefusesASchemaOlderThanTheBinary(t *testing.T) {
	db, _ := testenv.MySQL(t) // migrated with today's schema
	ahead := fstest.MapFS{"9999_future.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS future (id INT PRIMARY KEY)")}}
	entries, err := fs.ReadDir(schema.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(schema.FS, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		ahead[e.Name()] = &fstest.MapFile{Data: b}
	}
	var logs testenv.LogBuffer
	err = checks(&logs, "enforce", ahead).MySQL(context.Background(), db)
	if !errors.Is(err, migrate.ErrSchemaBehind) || !strings.Contains(err.Error(), "9999_future") || !strings.Contains(err.Error(), "run setup") {
		t.Fatalf("binary ahead of its schema: %v, want ErrSchemaBehind naming 9999_future and saying to run setup", err)
	}
	if err := checks(&logs, "enforce", schema.FS).MySQL(context.Background(), db); err != nil {
		t.Fatalf("binary and schema agree: %v", err)
	}
}

// TestRedisUnfitRefusedOrWarned: an evicting Redis stops start-up unless
// the operator chose FLASHSALE_SERVER_CHECKS=warn.
func TestRedisUnfitRefusedOrWarned(t *testing.T) {
	r := testenv.StartPrivateRedis(t)
	rdb := r.Client(time.Second)
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	var logs testenv.LogBuffer
	err := checks(&logs, "enforce", nil).Redis(ctx, rdb)
	if !errors.Is(err, stock.ErrServerUnfit) || !strings.Contains(err.Error(), "FLASHSALE_SERVER_CHECKS=warn") {
		t.Fatalf("enforce on allkeys-lru: %v, want ErrServerUnfit naming the downgrade", err)
	}
	if err := checks(&logs, "warn", nil).Redis(ctx, rdb); err != nil {
		t.Fatalf("warn on allkeys-lru: %v, want nil", err)
	}
	if !strings.Contains(logs.String(), "server unfit, starting anyway") || !strings.Contains(logs.String(), "allkeys-lru") {
		t.Fatalf("logs %q, want the warning with the policy", logs.String())
	}
}
