package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// BuildDeployables builds the ingress, consumer and reaper binaries, as
// they ship (no -race), into a new temporary directory named after prefix,
// for the suites that run them as separate processes (faults, scenarios)
// from TestMain. It returns the directory and the cleanup that removes it.
func BuildDeployables(prefix string) (dir string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(os.PathSeparator), "./ingress", "./consumer", "./reaper")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build binaries: %w\n%s", err, out)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
