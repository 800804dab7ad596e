package orderwriter_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// childEnv names the variable that turns the test binary into a consumer
// process (childSpec as JSON): a test can then SIGKILL a real process, not
// only cancel a goroutine.
const childEnv = "FLASHSALE_TEST_ORDERWRITER_CHILD"

// childSpec is what the child consumer needs: its database and its config.
type childSpec struct {
	DSN string
	Cfg orderwriter.Config
}

func TestMain(m *testing.M) {
	testenv.ChildMain(m, childEnv, runChild)
}

// runChild runs one consumer until it is killed (or SIGTERMed).
func runChild(s childSpec) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	common := config.Common{MySQLDSN: s.DSN}
	db, err := store.Open(ctx, common.DSN(), 16, 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer db.Close()
	common.RedisAddr = os.Getenv("FLASHSALE_REDIS_ADDR")
	if common.RedisAddr == "" {
		common.RedisAddr = "127.0.0.1:6379"
	}
	rdb := stock.NewClient(common.RedisAddrs(), 5*time.Second, 32)
	defer rdb.Close()
	c, err := orderwriter.New(s.Cfg, orderwriter.Deps{DB: db, Stock: stock.New(rdb)}, orderwriter.NewMetrics(prometheus.NewRegistry()), logger())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	if err := c.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// child is a consumer running in a process of its own.
type child struct {
	cmd *exec.Cmd
	out *testenv.LogBuffer
}

// startChild starts a consumer process with cfg against e's database.
func (e *env) startChild(cfg orderwriter.Config) *child {
	e.t.Helper()
	cmd := testenv.ChildCommand(e.t, childEnv, childSpec{DSN: e.dsn, Cfg: cfg})
	out := &testenv.LogBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	c := &child{cmd: cmd, out: out}
	e.t.Cleanup(func() { c.kill() })
	return c
}

// kill SIGKILLs the process and reaps it.
func (c *child) kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}
