//go:build tls

package stock_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// tlsRedis is the Redis of `deploy/local/stack.sh env --tls` (TLS port,
// ACL user), failing when those settings are not set.
func tlsRedis(t *testing.T) config.RedisConn {
	t.Helper()
	c := testenv.Common(t)
	conn := c.RedisConn()
	if conn.TLS == nil || conn.Username == "" || conn.Password == "" {
		t.Fatal(`the tls tests need the stack's TLS settings: eval "$(deploy/local/stack.sh env --tls)"`)
	}
	return conn
}

// checkedClient is a client of conn that passed the start-up check, and a
// context of 10 s for the test's calls; both end with the test.
func checkedClient(t *testing.T, conn config.RedisConn) (redis.UniversalClient, context.Context) {
	t.Helper()
	rdb := stock.NewClientFrom(conn, 2*time.Second, 4)
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := stock.Check(ctx, rdb, conn); err != nil {
		t.Fatal(err)
	}
	return rdb, ctx
}

// TestTLSRedisLogin: over TLS with the ACL user, the start-up check, the
// scripts and a round trip work.
func TestTLSRedisLogin(t *testing.T) {
	conn := tlsRedis(t)
	rdb, ctx := checkedClient(t, conn)
	if err := stock.LoadScripts(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	key := "flashsale:tls:" + testenv.Suffix()
	if err := rdb.Set(ctx, key, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "x" {
		t.Fatalf("get %q %v", v, err)
	}
}

// TestTLSRedisWrongPassword: a wrong ACL password is one line naming
// FLASHSALE_REDIS_PASSWORD, the address and the user, without the password.
func TestTLSRedisWrongPassword(t *testing.T) {
	conn := tlsRedis(t)
	conn.Password += "-wrong"
	msg := checkFails(t, conn)
	if want := "FLASHSALE_REDIS_PASSWORD: " + conn.Addrs[0] + ": refused the login of user " + conn.Username; !strings.HasPrefix(msg, want) {
		t.Fatalf("err = %q, want it to start %q", msg, want)
	}
	if strings.Contains(msg, conn.Password) {
		t.Fatalf("the password leaked: %q", msg)
	}
}

// TestTLSRedisUntrustedCA: the stack's certificate against another CA.
func TestTLSRedisUntrustedCA(t *testing.T) {
	conn := tlsRedis(t)
	conn.TLS = conn.TLS.Clone()
	conn.TLS.RootCAs = redisConn(t, map[string]string{"FLASHSALE_REDIS_TLS_CA_FILE": testenv.NewTestCA(t).CAFile}).TLS.RootCAs
	if msg := checkFails(t, conn); !strings.HasPrefix(msg, "FLASHSALE_REDIS_TLS_CA_FILE: "+conn.Addrs[0]+": x509: certificate signed by unknown authority") {
		t.Fatalf("err = %q", msg)
	}
}

// TestTLSRedisPlaintextOnTLSPort: TLS off against the TLS port names
// FLASHSALE_REDIS_TLS, in time.
func TestTLSRedisPlaintextOnTLSPort(t *testing.T) {
	conn := tlsRedis(t)
	conn.TLS = nil
	if msg := checkFails(t, conn); !strings.HasPrefix(msg, "FLASHSALE_REDIS_TLS: "+conn.Addrs[0]) {
		t.Fatalf("err = %q", msg)
	}
}

// sentinelEnv is `$FLASHSALE_STACK env --sentinel` as a map.
func sentinelEnv(t *testing.T) map[string]string {
	t.Helper()
	stack := os.Getenv("FLASHSALE_STACK")
	if stack == "" {
		t.Fatal(`FLASHSALE_STACK unset: eval "$(deploy/local/stack.sh env --tls)"`)
	}
	out, err := exec.Command(stack, "env", "--sentinel").Output()
	if err != nil {
		t.Fatalf("%s env --sentinel: %v", stack, err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "export "), "="); ok && strings.HasPrefix(l, "export FLASHSALE_REDIS_") {
			env[k] = strings.Trim(v, "'")
		}
	}
	if env["FLASHSALE_REDIS_MODE"] != "sentinel" || env["FLASHSALE_REDIS_SENTINEL_MASTER"] == "" {
		t.Fatalf("%s env --sentinel printed no sentinel settings: %v", stack, env)
	}
	return env
}

// TestSentinelFindsTheMaster: mode sentinel reaches the master through the
// stack's sentinel, and a master name it does not watch names
// FLASHSALE_REDIS_SENTINEL_MASTER.
func TestSentinelFindsTheMaster(t *testing.T) {
	env := sentinelEnv(t)
	conn := redisConn(t, env)
	rdb, ctx := checkedClient(t, conn)
	key := "flashsale:sentinel:" + testenv.Suffix()
	if err := rdb.Set(ctx, key, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	conn.SentinelMaster = "no-such-master"
	if msg := checkFails(t, conn); !strings.HasPrefix(msg, "FLASHSALE_REDIS_SENTINEL_MASTER: ") {
		t.Fatalf("err = %q", msg)
	}
}
