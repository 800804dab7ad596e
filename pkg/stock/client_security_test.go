package stock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// checkFails runs the start-up check of a client of conn and returns its
// error, failing the test if there is none, if it is not marked
// config.ErrRefused, is not one line, or takes much longer than the store
// timeout.
func checkFails(t *testing.T, conn config.RedisConn) string {
	t.Helper()
	const storeTimeout = 2 * time.Second
	rdb := stock.NewClientFrom(conn, storeTimeout, 4)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	start := time.Now()
	err := stock.Check(ctx, rdb, conn)
	if err == nil {
		t.Fatalf("Check %v succeeded", conn.Addrs)
	}
	if d := time.Since(start); d > storeTimeout+time.Second {
		t.Fatalf("Check took %v, want at most the store timeout %v", d, storeTimeout)
	}
	if !errors.Is(err, config.ErrRefused) {
		t.Errorf("%v is not config.ErrRefused", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error is not one line: %q", err)
	}
	return err.Error()
}

// redisConn resolves env (FLASHSALE_* settings) as the deployables do.
func redisConn(t *testing.T, env map[string]string) config.RedisConn {
	t.Helper()
	c := testenv.CommonFrom(t, env)
	return c.RedisConn()
}

// TestCheckUntrustedCA: a Redis whose certificate another CA signed is one
// line naming FLASHSALE_REDIS_TLS_CA_FILE and the address.
func TestCheckUntrustedCA(t *testing.T) {
	addr := testenv.NewTestCA(t).TLSListener(t)
	conn := redisConn(t, map[string]string{"FLASHSALE_REDIS_ADDR": addr, "FLASHSALE_REDIS_TLS_CA_FILE": testenv.NewTestCA(t).CAFile})
	msg := checkFails(t, conn)
	if want := "FLASHSALE_REDIS_TLS_CA_FILE: " + addr + ": x509: certificate signed by unknown authority"; !strings.HasPrefix(msg, want) {
		t.Fatalf("err = %q, want it to start %q", msg, want)
	}
}

// TestCheckPlaintextWhereTLSExpected: TLS against the stack's plaintext
// Redis names FLASHSALE_REDIS_TLS and the address, in time.
func TestCheckPlaintextWhereTLSExpected(t *testing.T) {
	c := testenv.Common(t)
	addr := c.RedisAddrs()[0]
	testenv.Redis(t) // it is up
	conn := redisConn(t, map[string]string{"FLASHSALE_REDIS_ADDR": addr, "FLASHSALE_REDIS_TLS": "true"})
	if msg := checkFails(t, conn); !strings.HasPrefix(msg, "FLASHSALE_REDIS_TLS: "+addr) {
		t.Fatalf("err = %q, want it to name FLASHSALE_REDIS_TLS and %s", msg, addr)
	}
}

// TestCheckClusterModeAgainstPlainNode: mode cluster against a plain Redis
// names FLASHSALE_REDIS_MODE.
func TestCheckClusterModeAgainstPlainNode(t *testing.T) {
	c := testenv.Common(t)
	if len(c.RedisAddrs()) != 1 {
		t.Skip("the stack's Redis is a cluster")
	}
	testenv.Redis(t)
	conn := redisConn(t, map[string]string{"FLASHSALE_REDIS_ADDR": c.RedisAddrs()[0], "FLASHSALE_REDIS_MODE": "cluster"})
	if msg := checkFails(t, conn); !strings.HasPrefix(msg, "FLASHSALE_REDIS_MODE: ") {
		t.Fatalf("err = %q, want it to name FLASHSALE_REDIS_MODE", msg)
	}
}

// TestNewClientFromModes: the mode picks the client: a cluster client for
// ONE configuration endpoint in mode cluster, the failover client for
// sentinel, and the login and TLS reach every one.
func TestNewClientFromModes(t *testing.T) {
	ca := testenv.NewTestCA(t)
	conn := redisConn(t, map[string]string{"FLASHSALE_REDIS_URL": "rediss://u:p@cfg.example:6379", "FLASHSALE_REDIS_MODE": "cluster",
		"FLASHSALE_REDIS_TLS_CA_FILE": ca.CAFile})
	cc, ok := stock.NewClientFrom(conn, time.Second, 1).(*redis.ClusterClient)
	if !ok {
		t.Fatalf("mode cluster with one seed: not a ClusterClient")
	}
	defer cc.Close()
	if o := cc.Options(); len(o.Addrs) != 1 || o.Username != "u" || o.Password != "p" || o.TLSConfig == nil || o.TLSConfig.ServerName != "cfg.example" {
		t.Fatalf("cluster options %+v", o)
	}
	conn = redisConn(t, map[string]string{"FLASHSALE_REDIS_ADDR": "127.0.0.1:1", "FLASHSALE_REDIS_MODE": "sentinel",
		"FLASHSALE_REDIS_SENTINEL_MASTER": "flashsale", "FLASHSALE_REDIS_PASSWORD": "p"})
	fc, ok := stock.NewClientFrom(conn, time.Second, 1).(*redis.Client)
	if !ok {
		t.Fatalf("mode sentinel: not the failover *redis.Client")
	}
	defer fc.Close()
	if o := fc.Options(); o.Password != "p" {
		t.Fatalf("failover options: password not passed")
	}
	single, ok := stock.NewClientFrom(redisConn(t, map[string]string{"FLASHSALE_REDIS_ADDR": "127.0.0.1:1"}), time.Second, 1).(*redis.Client)
	if !ok || single.Options().Addr != "127.0.0.1:1" || single.Options().TLSConfig != nil {
		t.Fatalf("single: %T", single)
	}
	single.Close()
}
