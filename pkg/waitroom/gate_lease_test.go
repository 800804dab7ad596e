package waitroom_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/lease"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// TestGateRefusesAnotherDeploymentsLease: two deployments (two databases)
// whose gates share one Redis and one lease name. The first runs and holds
// the lease; the second refuses to start, naming the holder and both
// databases, instead of sharing a lease with which one of them would
// admit nobody. A second replica of the first deployment starts as usual.
// A lease left by another deployment's gate that stopped (its TTL runs
// out) is no clash: that gate starts and takes it.
func TestGateRefusesAnotherDeploymentsLease(t *testing.T) {
	rdb := testenv.Redis(t)
	dbA, _ := testenv.MySQL(t)
	dbB, _ := testenv.MySQL(t)
	key := "fs:test:gate:" + testenv.Suffix()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := func(g *waitroom.Gate) (context.CancelFunc, <-chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		return cancel, done
	}
	a := waitroom.NewGate(waitroom.GateConfig{Interval: 20 * time.Millisecond, Lease: 300 * time.Millisecond, LeaseKey: key, Holder: "a"},
		dbA, rdb, waitroom.NewGateMetrics(prometheus.NewRegistry()), quiet)
	stopA, doneA := run(a)
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		h, err := lease.Current(context.Background(), rdb, key)
		return err == nil && strings.HasPrefix(h, "a of ")
	}, "the first deployment's gate never took the lease")

	b := waitroom.NewGate(waitroom.GateConfig{Interval: 20 * time.Millisecond, Lease: 300 * time.Millisecond, LeaseKey: key, Holder: "b"},
		dbB, rdb, waitroom.NewGateMetrics(prometheus.NewRegistry()), quiet)
	_, doneB := run(b)
	select {
	case err := <-doneB:
		if !errors.Is(err, waitroom.ErrLeaseClash) || !strings.Contains(err.Error(), `"a of `) || !strings.Contains(err.Error(), "FLASHSALE_DEPLOYMENT") {
			t.Fatalf("the other deployment's gate returned %v; want ErrLeaseClash naming the holder and FLASHSALE_DEPLOYMENT", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other deployment's gate did not refuse to start within 30 s")
	}

	a2 := waitroom.NewGate(waitroom.GateConfig{Interval: 20 * time.Millisecond, Lease: 300 * time.Millisecond, LeaseKey: key, Holder: "a2"},
		dbA, rdb, waitroom.NewGateMetrics(prometheus.NewRegistry()), quiet)
	stopA2, doneA2 := run(a2)
	select {
	case err := <-doneA2:
		t.Fatalf("a second replica of the same deployment stopped: %v", err)
	case <-time.After(time.Second): // longer than checkLease's wait (1.5 TTL)
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	stopA2()
	if err := <-doneA2; err != nil {
		t.Fatal(err)
	}

	// A lease another deployment's gate left behind when it died: held
	// for one TTL more, then free.
	if ok, err := lease.Hold(context.Background(), rdb, key, "dead of elsewhere@20200101T000000.000", 300*time.Millisecond); err != nil || !ok {
		t.Fatalf("plant a dead gate's lease: %v %v", ok, err)
	}
	stopB2, doneB2 := run(waitroom.NewGate(waitroom.GateConfig{Interval: 20 * time.Millisecond, Lease: 300 * time.Millisecond, LeaseKey: key, Holder: "b2"},
		dbB, rdb, waitroom.NewGateMetrics(prometheus.NewRegistry()), quiet))
	testenv.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		h, err := lease.Current(context.Background(), rdb, key)
		return err == nil && strings.HasPrefix(h, "b2 of ")
	}, "a gate did not take a lease its dead holder left behind")
	stopB2()
	if err := <-doneB2; err != nil {
		t.Fatal(err)
	}
}
