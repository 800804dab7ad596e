package deploy

import (
	"os"
	"strings"
	"testing"
)

// TestDockerContextLeavesTheLocalStackOut: the Dockerfile copies the whole
// context (COPY . .), and .stack/ holds the local stack's datadir, TLS keys,
// passwords and JWT secret, so the context must never carry it.
func TestDockerContextLeavesTheLocalStackOut(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatalf("no .dockerignore: docker build would send .stack/ (secrets) to the builder: %v", err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{".stack/", ".git/", "bin/"} {
		if !lines[want] && !lines[strings.TrimSuffix(want, "/")] {
			t.Errorf(".dockerignore does not exclude %s", want)
		}
	}
}
