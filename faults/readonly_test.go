//go:build faults

package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMySQLReadOnly: MariaDB made read-only for 10 s mid-sale (SET GLOBAL
// read_only=1, as a primary is while it is switched over) and writable
// again. Every write of the consumers and the reaper fails for the whole
// window with a server error (1290): an outage to wait out, not a reason to
// give up. No message may reach the DLQ and every 202 must become an order.
func TestMySQLReadOnly(t *testing.T) {
	start := time.Now()
	cfg := defaultSettings()
	// Requests admitted during the window wait 10 s and more for their
	// write; with the usual 10 s grace the reaper would void some of them
	// the moment MySQL is writable again, and this test is about the
	// consumer keeping them.
	cfg.OrphanGrace = time.Minute
	cfg.Units = 200
	p := newPipeline(t, cfg)
	w := p.startBurst(pick(400, 1000), 30)

	ro := readOnly(t, 10*time.Second)
	hold(10 * time.Second)
	var decided int64
	if err := p.db.QueryRow("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ?", p.itemID).Scan(&decided); err != nil {
		t.Fatalf("count decisions while read-only: %v", err)
	}
	accepted := w.nAccept.Load()
	ro.off()
	t.Logf("at the end of the read-only window: %d requests accepted, %d decided", accepted, decided)
	if decided >= accepted {
		t.Fatalf("every accepted request was decided before MySQL became writable: the fault was not exercised")
	}

	rep := p.settle("mysql read-only 10s", start, w)
	seen := 0
	for _, c := range p.consumers {
		seen += c.grepLog("read-only") + c.grepLog("READ ONLY")
	}
	t.Logf("consumer log lines naming the read-only error: %d", seen)
	if seen == 0 {
		t.Errorf("no consumer saw a read-only error: the fault was not exercised")
	}
	if rep.dlq != 0 {
		t.Errorf("%d messages dead-lettered while MySQL was read-only, want 0", rep.dlq)
	}
	if n := rep.final["REJECTED"]; n != 0 {
		t.Errorf("%d of %d accepted requests ended REJECTED, want every 202 ordered", n, rep.accepted)
	}
	if got := rep.outcomes["ORDERED"]; got != int64(rep.accepted) {
		t.Errorf("ORDERED outcomes %d for %d accepted requests (%v)", got, rep.accepted, rep.outcomes)
	}
}

// readOnlySwitch is the shared MariaDB's global read_only, set by readOnly.
type readOnlySwitch struct {
	t        *testing.T
	mysql    []string // the root client over the stack's socket
	watchdog *exec.Cmd
	done     bool
}

// readOnly makes the stack's MariaDB read-only, as root over its socket
// (the app user cannot). Three things turn it off again: off, t.Cleanup,
// and a detached watchdog that does it after hold plus a margin even if
// this test binary is killed, so the shared server never stays read-only.
func readOnly(t *testing.T, hold time.Duration) *readOnlySwitch {
	t.Helper()
	sock := filepath.Join(stackStateDir(), "mysql.sock")
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("MariaDB socket of the local stack: %v (make stack-up; FLASHSALE_STATE_DIR names a stack kept elsewhere)", err)
	}
	bin, err := exec.LookPath("mariadb")
	if err != nil {
		if bin, err = exec.LookPath("mysql"); err != nil {
			t.Fatalf("no mariadb or mysql client installed: %v", err)
		}
	}
	s := &readOnlySwitch{t: t, mysql: []string{bin, "--no-defaults", "-uroot", "--socket=" + sock}}
	margin := hold + 20*time.Second
	wd := exec.Command("sh", "-c", `sleep "$1" && exec "$2" --no-defaults -uroot --socket="$3" -e 'SET GLOBAL read_only=0'`,
		"sh", fmt.Sprint(int(margin.Seconds())), bin, sock)
	wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := wd.Start(); err != nil {
		t.Fatalf("read-only watchdog: %v", err)
	}
	s.watchdog = wd
	t.Cleanup(s.off)
	s.sql("SET GLOBAL read_only=1")
	t.Logf("MariaDB read-only (watchdog turns it off after %v at the latest)", margin)
	return s
}

// off makes MariaDB writable again and stops the watchdog; repeated calls
// are no-ops.
func (s *readOnlySwitch) off() {
	if s.done {
		return
	}
	s.done = true
	s.sql("SET GLOBAL read_only=0")
	if out := s.sql("SELECT @@global.read_only"); strings.TrimSpace(out) != "0" {
		s.t.Errorf("MariaDB still read-only after SET GLOBAL read_only=0: %q", out)
	}
	_ = syscall.Kill(-s.watchdog.Process.Pid, syscall.SIGKILL)
	_ = s.watchdog.Wait()
	s.t.Logf("MariaDB writable again")
}

func (s *readOnlySwitch) sql(stmt string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append(append([]string{}, s.mysql[1:]...), "-N", "-e", stmt)
	out, err := exec.CommandContext(ctx, s.mysql[0], args...).CombinedOutput()
	if err != nil {
		s.t.Errorf("%s: %v: %s", stmt, err, out)
	}
	return string(out)
}

// stackStateDir is where deploy/local/stack.sh keeps its state (and
// MariaDB's socket): FLASHSALE_STATE_DIR, or .stack next to the stack
// script the environment names, or in this checkout.
func stackStateDir() string {
	if d := os.Getenv("FLASHSALE_STATE_DIR"); d != "" {
		return d
	}
	if script := os.Getenv("FLASHSALE_STACK"); script != "" {
		return filepath.Join(filepath.Dir(script), "..", "..", ".stack")
	}
	return filepath.Join(repoRoot(), ".stack")
}
