package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// PrivateRedis is a redis-server process of the test's own, on a free port,
// so a test can stop it without disturbing tests that share the stack's Redis.
type PrivateRedis struct {
	Addr string
	t    testing.TB
	dir  string
	cmd  *exec.Cmd
}

// StartPrivateRedis starts one (without persistence); it is stopped when the
// test ends.
func StartPrivateRedis(t testing.TB) *PrivateRedis {
	t.Helper()
	NeedStack(t, "a redis-server of its own")
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("testenv: redis-server not installed; %s", hint)
	}
	r := &PrivateRedis{Addr: FreeAddr(t), t: t, dir: t.TempDir()}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Start (re)starts the server, empty.
func (r *PrivateRedis) Start() {
	r.t.Helper()
	_, port, _ := net.SplitHostPort(r.Addr)
	r.cmd = exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	r.cmd.Stdout, r.cmd.Stderr = nil, os.Stderr
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("testenv: start redis: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer c.Close()
	Eventually(r.t, 10*time.Second, 50*time.Millisecond, func() bool {
		return c.Ping(context.Background()).Err() == nil
	}, "private redis on %s did not start", r.Addr)
}

// Stop kills the server (SIGKILL: an abrupt loss).
func (r *PrivateRedis) Stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_, _ = r.cmd.Process.Wait()
		r.cmd = nil
	}
}

// Pause SIGSTOPs the server: its port still accepts connections (the
// kernel completes the handshake) but nothing answers, like a Redis stuck in
// a long command or a fork, or a black-holed network. Resume undoes it; Stop
// kills a paused server too.
func (r *PrivateRedis) Pause() { r.signal(syscall.SIGSTOP) }

// Resume SIGCONTs a paused server.
func (r *PrivateRedis) Resume() { r.signal(syscall.SIGCONT) }

func (r *PrivateRedis) signal(sig syscall.Signal) {
	r.t.Helper()
	if r.cmd == nil || r.cmd.Process == nil {
		r.t.Fatalf("testenv: %s is not running", r)
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("testenv: %v to %s: %v", sig, r, err)
	}
}

// Client returns a client on it with the given per-call timeout.
func (r *PrivateRedis) Client(timeout time.Duration) redis.UniversalClient {
	c := stock.NewClient([]string{r.Addr}, timeout, 64)
	r.t.Cleanup(func() { c.Close() })
	return c
}

func (r *PrivateRedis) String() string { return fmt.Sprintf("redis %s", r.Addr) }

// WarmBuckets warms a new item in s with one bucket per entry of stocks,
// its sale open (from a minute ago for an hour), one unit per buyer, and
// returns its id.
func WarmBuckets(t testing.TB, s *stock.Store, stocks ...int64) int64 {
	t.Helper()
	id := ItemID()
	now := time.Now()
	err := s.Warm(context.Background(), stock.Snapshot{ItemID: id, BucketStock: stocks,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), PerUserLimit: 1})
	if err != nil {
		t.Fatalf("warm: %v", err)
	}
	return id
}

// WarmAt warms item id in s with units of stock, its sale open (from a
// minute ago for an hour), two units per buyer.
func WarmAt(t testing.TB, s *stock.Store, id, units int64) {
	t.Helper()
	now := time.Now()
	err := s.Warm(context.Background(), stock.Snapshot{ItemID: id, Stock: units, StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), PerUserLimit: 2})
	if err != nil {
		t.Fatalf("warm item %d: %v", id, err)
	}
}
