package scenarios

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
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
		dir, cleanup, err := testenv.BuildDeployables("flashsale-scenarios-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "scenarios:", err)
			return 1
		}
		defer cleanup()
		binDir = dir
		code := m.Run()
		stopAll(code != 0)
		return code
	}()
	os.Exit(code)
}
