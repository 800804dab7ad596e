package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/schema"
)

const hint = "start the local stack with `make stack-up` (or point FLASHSALE_* at running servers)"

// Common returns the shared settings from the environment, defaults as in
// production flags (the local stack's addresses).
func Common(t testing.TB) config.Common {
	t.Helper()
	NeedStack(t, "its settings")
	var c config.Common
	load(t, &c, os.LookupEnv)
	return c
}

// Suffix returns a short random string for names.
func Suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ItemID returns a random positive item id, so tests sharing Redis never meet.
func ItemID() int64 {
	n, _ := rand.Int(rand.Reader, big.NewInt(1<<40))
	return n.Int64() + 1_000_000
}

// MySQL creates a fresh database for the test, applies the migrations and
// returns a pool on it and its DSN (as the deployables take it). The database
// is dropped when the test ends.
func MySQL(t testing.TB) (*sql.DB, string) {
	t.Helper()
	NeedStack(t, "MySQL")
	c := Common(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := store.Open(ctx, c.DSN(), 2, 5*time.Second)
	if err != nil {
		t.Fatalf("testenv: MySQL at %s unreachable: %v; %s", redactDSN(c.MySQLDSN), err, hint)
	}
	defer admin.Close()
	cfg, _ := mysql.ParseDSN(c.MySQLDSN)
	name := fmt.Sprintf("%s_t%s", cfg.DBName, Suffix())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("testenv: create database %s: %v", name, err)
	}
	cfg.DBName = name
	dsn := cfg.FormatDSN()
	c.MySQLDSN = dsn
	db, err := store.Open(ctx, c.DSN(), 64, 5*time.Second)
	if err != nil {
		t.Fatalf("testenv: open %s: %v", name, err)
	}
	if _, err := migrate.Apply(ctx, db, schema.FS, discard()); err != nil {
		t.Fatalf("testenv: migrate %s: %v", name, err)
	}
	t.Cleanup(func() {
		db.Close()
		if os.Getenv("FLASHSALE_TEST_KEEP_DB") != "" {
			t.Logf("testenv: kept database %s", name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		base := Common(t)
		if a, err := store.Open(ctx, base.DSN(), 1, 5*time.Second); err == nil {
			_, _ = a.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
			a.Close()
		}
	})
	return db, dsn
}

// Redis returns a client on the shared Redis, closed when the test ends.
func Redis(t testing.TB) redis.UniversalClient {
	t.Helper()
	NeedStack(t, "Redis")
	c := Common(t)
	rdb := stock.NewClientFrom(c.RedisConn(), 5*time.Second, 256)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("testenv: Redis at %s unreachable: %v; %s", c.RedisAddr, err, hint)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Kafka returns the brokers after checking one answers.
func Kafka(t testing.TB) []string {
	t.Helper()
	NeedStack(t, "Kafka")
	c := Common(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := KafkaSecurity(t).Ping(ctx, c.Brokers()); err != nil {
		t.Fatalf("testenv: Kafka at %s unreachable: %v; %s", c.KafkaBrokers, err, hint)
	}
	return c.Brokers()
}

// Topics creates a fresh orders topic (with partitions) and DLQ topic for the
// test, with the durability setup's settings configure (Durability), and
// returns their names and a fresh consumer group id.
func Topics(t testing.TB, partitions int) (orders, dlq, group string) {
	t.Helper()
	NeedStack(t, "Kafka")
	brokers := Kafka(t)
	s := Suffix()
	orders, dlq, group = "test.orders."+s, "test.dlq."+s, "test-group-"+s
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := KafkaSecurity(t).EnsureTopics(ctx, brokers, []orderlog.TopicSpec{{Name: orders, Partitions: partitions}, {Name: dlq, Partitions: 1}}, Durability(t))
	if err != nil {
		t.Fatalf("testenv: create topics: %v", err)
	}
	t.Cleanup(func() { deleteTopics(t, brokers, orders, dlq) })
	return orders, dlq, group
}

// deleteTopics deletes a finished test's topics. A stack that keeps them
// slows down run after run: after three make test runs the local broker
// held 1,911 topics (2,466 partitions) and pkg/httpapi took 290 s, failing
// on publish and readiness timeouts; 49 s once they were gone. A deletion
// that fails is logged, not failed: the test itself is over.
func deleteTopics(t testing.TB, brokers []string, topics ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := KafkaSecurity(t).Client(brokers).DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: topics})
	if err == nil {
		for name, e := range res.Errors {
			if e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	}
	if err != nil {
		t.Logf("testenv: delete topics %v: %v", topics, err)
	}
}

// StackScript returns the path of deploy/local/stack.sh, which fault tests use
// to stop and start servers (never pkill by name).
func StackScript(t testing.TB) string {
	t.Helper()
	NeedStack(t, "deploy/local/stack.sh")
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "local", "stack.sh")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testenv: stack script: %v", err)
	}
	return p
}

// Eventually polls cond every interval until it is true or timeout passes,
// then fails with msg. No sleeps guessed in tests: a test waits exactly as
// long as its effect takes, and timeout only bounds a hang (give it room
// for a loaded 2-core machine; it asserts no speed).
func Eventually(t testing.TB, timeout, interval time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return
			}
		case <-deadline.C:
			if cond() {
				return
			}
			t.Fatalf("testenv: after %v: "+msg, append([]any{timeout}, args...)...)
			return // a TB whose Fatalf returns (a recorder) must not spin here
		}
	}
}

func redactDSN(dsn string) string {
	if at := strings.LastIndex(dsn, "@"); at >= 0 {
		return "***" + dsn[at:]
	}
	return dsn
}
