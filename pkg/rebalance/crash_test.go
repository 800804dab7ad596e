package rebalance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// childEnv names the variable that turns this test binary into a mover
// process (childSpec as JSON), so a test can SIGKILL a real process between
// a transfer's two writes. Only this file reads it.
const childEnv = "FLASHSALE_TEST_REBALANCE_CHILD"

// childSpec is what the child mover needs: its database and the write
// after which it kills itself.
type childSpec struct {
	DSN       string
	RedisAddr string
	KillAfter string // "out" or "moved" (crashAfter's steps)
	// Pool, when set, makes the child move units of a waitlist (MovePool,
	// as the gate does) instead of running a pass.
	Pool *poolSpec
}

// poolSpec is one MovePool call.
type poolSpec struct {
	Item              int64
	Buckets, From, To int
	Qty               int64
}

func TestMain(m *testing.M) {
	testenv.ChildMain(m, childEnv, runChild)
}

// runChild runs one rebalance pass (or the spec's MovePool) with
// crashAfter set to SIGKILL this process after the spec's step. Reaching the end is a failure (exit 3):
// the pass was expected to make a move.
func runChild(s childSpec) int {
	crashAfter = func(step string) {
		if step == s.KillAfter {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	ctx := context.Background()
	common := config.Common{MySQLDSN: s.DSN, RedisAddr: s.RedisAddr}
	db, err := store.Open(ctx, common.DSN(), 4, 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer db.Close()
	rdb := stock.NewClient(common.RedisAddrs(), 5*time.Second, 8)
	defer rdb.Close()
	r := New(Config{StoreTimeout: 5 * time.Second}, Deps{DB: db, Redis: rdb}, NewMetrics(prometheus.NewRegistry()), quiet())
	if p := s.Pool; p != nil {
		if _, err := r.MovePool(ctx, p.Item, p.Buckets, p.From, p.To, p.Qty); err != nil {
			fmt.Fprintln(os.Stderr, "child: move pool:", err)
			return 1
		}
	} else if err := r.Pass(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child: pass:", err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "child: pass ended without reaching", s.KillAfter)
	return 3
}

// runMover runs a child mover against e's database and waits for it; it
// must die by SIGKILL.
func (e *env) runMover(killAfter string) {
	e.t.Helper()
	e.runMoverSpec(childSpec{KillAfter: killAfter})
}

// runMoverSpec is runMover for a spec (its store settings are e's).
func (e *env) runMoverSpec(c childSpec) {
	e.t.Helper()
	c.DSN, c.RedisAddr = e.dsn, testenv.Common(e.t).RedisAddr
	cmd := testenv.ChildCommand(e.t, childEnv, c)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		e.t.Fatalf("child mover did not end; output:\n%s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		e.t.Fatalf("child mover: %v; want it killed; output:\n%s", err, out.String())
	}
	ws, ok := exit.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		e.t.Fatalf("child mover ended %v, not by SIGKILL; output:\n%s", err, out.String())
	}
}

// The process moving stock is SIGKILLed between its two writes, in either
// gap: after the Redis take from the donor (MySQL not yet moved), and after
// the MySQL move (Redis not yet given). The next pass, in another process,
// finishes the transfer once: nothing invented, nothing lost, in either
// store, the transfer DONE and TransfersLive empty.
func TestCrashMidTransfer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		killAfter string
		state     store.TransferState
		// MySQL stock of buckets 0 and 1 and Redis stock of 0 and 1 as the
		// crash leaves them.
		mysql, redis []int64
	}{
		{"out", store.TransferPlanned, []int64{10, 10}, []int64{5, 0}},
		{"moved", store.TransferMoved, []int64{5, 15}, []int64{5, 0}},
	} {
		t.Run("after "+tc.killAfter, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			item := e.item(40, 4)
			e.admit(item, 4, 1, 10) // bucket 1 sold out in Redis, its 10 units reserved
			e.setWant(item, 1)      // a buyer found it short

			e.runMover(tc.killAfter)

			open, err := openTransfers(ctx, e.db, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(open) != 1 || open[0].State != tc.state || open[0].From != 0 || open[0].To != 1 || open[0].Qty != 5 {
				t.Fatalf("after the crash, open transfers = %+v; want one %s 0->1 qty 5", open, tc.state)
			}
			s := e.snapshot(item, 4)
			if got := []int64{s.mysql[0].Stock, s.mysql[1].Stock}; !slices.Equal(got, tc.mysql) {
				t.Fatalf("after the crash, MySQL stock of buckets 0, 1 = %v; want %v", got, tc.mysql)
			}
			if got := s.redis[:2]; !slices.Equal(got, tc.redis) {
				t.Fatalf("after the crash, Redis stock of buckets 0, 1 = %v; want %v", got, tc.redis)
			}
			if live := e.rdb.SMembers(ctx, stock.KeysOf(item).TransfersLive()).Val(); len(live) != 1 || live[0] != itoa(open[0].ID) {
				t.Fatalf("after the crash, TransfersLive = %v; want [%d]", live, open[0].ID)
			}
			if gone, err := e.soldOut(item, 4, 1); err != nil || gone {
				t.Fatalf("sold out during the crashed transfer = %v, %v; want false", gone, err)
			}

			for range 2 { // the repair, then a pass that must find nothing to repair
				if err := e.r.Pass(ctx); err != nil {
					t.Fatalf("pass after the crash: %v", err)
				}
			}
			s = e.conserved(item, 4, 40)
			if !slices.Equal(s.redis, []int64{5, 5, 10, 10}) || s.mysql[0].Stock != 5 || s.mysql[1].Stock != 15 || s.mysql[1].TotalStock != 15 {
				t.Fatalf("after the repair: Redis %v, MySQL %+v; want Redis [5 5 10 10], MySQL 5 and 15 in buckets 0 and 1", s.redis, s.mysql)
			}
			if st := e.settled(item); st[store.TransferDone] != 1 || len(st) != 1 {
				t.Fatalf("transfers after the repair = %v; want exactly one, DONE", st)
			}
			if v := e.metric("flashsale_bucket_transfers_total", "result", "resumed"); v != 1 {
				t.Fatalf("resumed transfers = %v; want 1", v)
			}
			if e.rdb.Exists(ctx, stock.BucketKeys(item, 1).Want).Val() != 0 {
				t.Fatal("the refilled bucket still wants")
			}
		})
	}
}
