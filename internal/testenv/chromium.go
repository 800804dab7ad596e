package testenv

import (
	"os/exec"
	"testing"
)

// Chromium returns Debian's headless browser. Under -short (make
// test-unit) the test skips; otherwise it fails, never skips: make test
// installs it (deploy/local/report-deps.sh browser runs before go test), so
// a missing browser is a broken machine, not a pass.
func Chromium(t testing.TB) string {
	t.Helper()
	NeedStack(t, "chromium")
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not on PATH: run deploy/local/report-deps.sh browser (make test does) to install Debian's chromium")
	return ""
}
