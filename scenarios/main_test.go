package scenarios

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// binDir holds the ingress, consumer and reaper binaries built once for the
// package: the scenarios run exactly what ships, as separate processes.
var binDir string

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// TestMain builds the three deployables (without -race: they are the
// system under test seen from outside, and the race detector's cost would
// make their timing, which the scenarios check, unlike production's).
func TestMain(m *testing.M) {
	// Under -short (make test-unit) every scenario skips: build nothing.
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	code := func() int {
		dir, err := os.MkdirTemp("", "flashsale-scenarios-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "scenarios:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(os.PathSeparator), "./ingress", "./consumer", "./reaper")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "scenarios: build binaries: %v\n%s", err, out)
			return 1
		}
		binDir = dir
		code := m.Run()
		stopAll(code != 0)
		return code
	}()
	os.Exit(code)
}
