package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStalePidFileNamesNoService: a pid file left behind (by a machine that
// rebooted, or a stack whose state outlived its processes) may name a pid
// the kernel has since given to an unrelated process. The scripts must not
// take that process for their service: CI's Galera step once found
// node-1 "running" at once, skipped the bootstrap and failed to reach its
// socket (exit 2 after 0 s), and stop/down would have killed whatever held
// the pid. A pid file written for the process it names still counts.
//
// It needs no server: the stranger is a sleep of the test's own.
func TestStalePidFileNamesNoService(t *testing.T) {
	stranger := exec.Command("sleep", "120")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	go func() { _ = stranger.Wait(); close(gone) }()
	t.Cleanup(func() { _ = stranger.Process.Kill(); <-gone })
	pid := strconv.Itoa(stranger.Process.Pid)

	state := t.TempDir()
	stale := func(name string) {
		t.Helper()
		f := filepath.Join(state, name)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		// As an older stack wrote it: the pid alone, written before the
		// stranger was started.
		if err := os.WriteFile(f, []byte(pid+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	run := func(script string, args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", append([]string{filepath.Join("local", script)}, args...)...)
		cmd.Env = append(os.Environ(), "FLASHSALE_STATE_DIR="+state, "FLASHSALE_JWT_SECRET=test-only-not-a-secret")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}

	stale("redis.pid")
	stale("galera/node-1.pid")
	stale("run/ingress.pid")
	if out := run("stack.sh", "status"); !strings.Contains(out, "redis not running") {
		t.Errorf("stack.sh status with a stale redis.pid:\n%s\nwant \"redis not running\"", out)
	}
	if out := run("stack.sh", "status", "--galera"); !strings.Contains(out, "node-1 not running") {
		t.Errorf("stack.sh status --galera with a stale node-1.pid:\n%s\nwant \"node-1 not running\"", out)
	}
	// run.sh stop signals and returns; stack.sh stop waits for what it
	// signalled to exit, which the goroutine above that waits on the
	// stranger makes prompt. Run after it, the stranger's end (if either
	// had signalled it) is already seen.
	run("run.sh", "stop")
	run("stack.sh", "stop", "redis")
	select {
	case <-gone:
		t.Fatalf("run.sh stop / stack.sh stop redis ended pid %s, which only a stale pid file named", pid)
	default:
	}

	// As this stack writes them: the pid and its process's start time. One
	// that names the pid with another start time names another process.
	redisPid := filepath.Join(state, "redis.pid")
	if err := os.WriteFile(redisPid, []byte(pid+" 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("stack.sh", "status"); !strings.Contains(out, "redis not running") {
		t.Errorf("stack.sh status with redis.pid naming the pid at another start:\n%s\nwant \"redis not running\"", out)
	}
	if out, err := exec.Command("bash", "-c", `source local/pidfile.sh && pidfile_write "$0" "$1"`, redisPid, pid).CombinedOutput(); err != nil {
		t.Fatalf("pidfile_write: %v %s", err, out)
	}
	if out := run("stack.sh", "status"); !strings.Contains(out, "redis running (pid "+pid) {
		t.Errorf("stack.sh status with redis.pid as pidfile_write wrote it:\n%s\nwant \"redis running (pid %s\"", out, pid)
	}

	// An older stack's pid file (the pid alone) written after its process
	// started still names it.
	if err := os.WriteFile(redisPid, []byte(pid+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("stack.sh", "status"); !strings.Contains(out, "redis running (pid "+pid) {
		t.Errorf("stack.sh status with a fresh pid-only redis.pid:\n%s\nwant \"redis running (pid %s\"", out, pid)
	}
}
