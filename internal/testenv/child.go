package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// ChildMain is the TestMain of a test binary that doubles as a child
// process, so that a test can SIGKILL a real process and not only cancel a
// goroutine: with the variable env set, the binary decodes its value (a
// spec of type S, as JSON) and exits with what run returns (2 if the spec
// does not decode); without it, the binary runs its tests.
func ChildMain[S any](m *testing.M, env string, run func(S) int) {
	if spec := os.Getenv(env); spec != "" {
		var s S
		if err := json.Unmarshal([]byte(spec), &s); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(run(s))
	}
	os.Exit(m.Run())
}

// ChildCommand is the command that runs this test binary as a child with
// spec (see ChildMain, under the same env), running none of its tests.
// The caller sets its output and starts it.
func ChildCommand(t testing.TB, env string, spec any) *exec.Cmd {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+string(b))
	return cmd
}
