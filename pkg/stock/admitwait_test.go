package stock_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// With WaitReplicas the admission waits for the replica of its primary: a
// primary with a live replica reports it; one without reports 0 after the
// wait. A script cache flushed on the node (a restart, a failover) is
// reloaded on that node.
func TestAdmitWaitsForReplicas(t *testing.T) {
	primary := testenv.StartPrivateRedis(t)
	replica := testenv.StartPrivateRedis(t)
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { rc.Close() })
	s := replicated(t, primary, rc)
	item := warmItem(t, s, 10, 1)
	if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	req := func(user int64) stock.AdmitRequest {
		return stock.AdmitRequest{ItemID: item, UserID: user, Qty: 1, RequestID: reqid.New(item, time.Now()),
			WaitReplicas: 1, WaitTimeout: 500 * time.Millisecond}
	}
	r, err := s.Admit(ctx, req(1))
	if err != nil || r.Code != stock.Admitted || r.Replicas != 1 {
		t.Fatalf("with a replica: %+v %v, want admitted, 1 replica", r, err)
	}
	// The replica has the reservation the moment the admission returns.
	if n, err := rc.HLen(ctx, stock.KeysOf(item).Reservations).Result(); err != nil || n != 1 {
		t.Fatalf("replica holds %d reservations (%v), want 1", n, err)
	}

	// The replica gone: the admission still succeeds, reporting 0 after the wait.
	replica.Stop()
	start := time.Now()
	r, err = s.Admit(ctx, req(2))
	if err != nil || r.Code != stock.Admitted || r.Replicas != 0 {
		t.Fatalf("without a replica: %+v %v, want admitted, 0 replicas", r, err)
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("returned after %v: it did not wait for the replica", d)
	}
}

// replicated makes rc a replica of primary and returns a store on primary
// once the replica is attached.
func replicated(t testing.TB, primary *testenv.PrivateRedis, rc *redis.Client) *stock.Store {
	t.Helper()
	ctx := context.Background()
	host, port, err := net.SplitHostPort(primary.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	s := stock.New(primary.Client(2 * time.Second))
	testenv.Eventually(t, 10*time.Second, 50*time.Millisecond, func() bool {
		n, err := s.Client().Do(ctx, "WAIT", 1, 100).Int()
		return err == nil && n == 1
	}, "replica did not attach")
	return s
}

// BenchmarkAdmitWait: admissions without and with waiting for one replica
// (primary and replica on this machine), side by side in one run.
func BenchmarkAdmitWait(b *testing.B) {
	primary := testenv.StartPrivateRedis(b)
	replica := testenv.StartPrivateRedis(b)
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	b.Cleanup(func() { rc.Close() })
	s := replicated(b, primary, rc)
	testenv.BenchAdmitWait(b, s)
}
