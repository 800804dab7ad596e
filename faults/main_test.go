//go:build faults

package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// binDir holds the ingress, consumer and reaper binaries every test runs.
var binDir string

// full is true under FLASHSALE_FAULTS=full: longer bursts, more kills.
var full = os.Getenv("FLASHSALE_FAULTS") == "full"

// repoRoot is the module root (this file's parent directory).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// TestMain builds the real binaries once, so every fault runs exactly what
// ships, and leaves the shared stack running whatever happened.
func TestMain(m *testing.M) {
	code := func() int {
		dir, cleanup, err := binaries()
		if err != nil {
			fmt.Fprintln(os.Stderr, "faults:", err)
			return 1
		}
		defer cleanup()
		binDir = dir
		return m.Run()
	}()
	if stackUsed.Load() {
		restoreStack()
	}
	os.Exit(code)
}

func binaries() (string, func(), error) {
	if dir := os.Getenv("FLASHSALE_FAULTS_BIN"); dir != "" {
		return dir, func() {}, nil
	}
	return testenv.BuildDeployables("flashsale-faults-bin-")
}

// restoreStack resumes and starts every server of the local stack; both are
// no-ops on a healthy stack. It is the last line of defence after the
// per-test cleanups.
func restoreStack() {
	script := filepath.Join(repoRoot(), "deploy", "local", "stack.sh")
	for _, args := range [][]string{
		{"resume", "kafka"}, {"resume", "mysql"}, {"resume", "redis"},
		{"start", "mysql"}, {"start", "redis"}, {"start", "kafka"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		out, err := exec.CommandContext(ctx, script, args...).CombinedOutput()
		cancel()
		if err != nil && args[0] == "start" {
			fmt.Fprintf(os.Stderr, "faults: stack.sh %v: %v\n%s", args, err, out)
		}
	}
}
