package deploy

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// lookupRounds is how often each node name is looked up. The pipefail race
// this guards against (cluster_nodes piped into grep -qx NAME under pipefail) called
// a listed node "unknown" in 227 of 300 tries of the first name; 25 tries of
// every name meet it many times over.
const lookupRounds = 25

// TestStackNodeLookupsNeverSayUnknown: every node of the cluster and Galera
// modes is known every time it is looked up (the lookup that start, stop,
// kill, pause and resume make first), and a name that is no node is refused
// by name. It needs no server: the lookup is the script's own.
func TestStackNodeLookupsNeverSayUnknown(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash: %v", err)
	}
	stack := filepath.Join("local", "stack.sh")
	modes := map[string][]string{
		"--cluster": {"kafka-1", "kafka-2", "kafka-3", "redis-7001", "redis-7002", "redis-7003", "redis-7004", "redis-7005", "redis-7006"},
		"--galera":  {"node-1", "node-2", "node-3", "haproxy"},
	}
	// A state directory of its own: the lookups must not touch the
	// checkout's stack.
	env := append(os.Environ(), "FLASHSALE_STATE_DIR="+t.TempDir())
	for mode, names := range modes {
		for _, name := range names {
			for i := range lookupRounds {
				cmd := exec.Command("bash", stack, "node", mode, name)
				cmd.Env = env
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("stack.sh node %s %s, try %d: %v\n%s", mode, name, i+1, err, out)
				}
			}
		}
		cmd := exec.Command("bash", stack, "node", mode, "kafka-9")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "unknown node kafka-9") {
			t.Fatalf("stack.sh node %s kafka-9: %v %q, want refused as an unknown node", mode, err, out)
		}
	}
}

// TestLintScriptsRefusesEarlyExitingPipes: the lint make test runs first
// passes on the repository's scripts and refuses each shape of a pipe into
// a reader that may leave before its writer is done.
func TestLintScriptsRefusesEarlyExitingPipes(t *testing.T) {
	lint := filepath.Join("local", "lint-scripts.sh")
	if out, err := exec.Command("bash", lint).CombinedOutput(); err != nil {
		t.Fatalf("lint-scripts.sh on the repository: %v\n%s", err, out)
	}
	// The pipe is spelled "| " + "grep" so that a repository-wide search
	// for the shape (a reviewer's grep) finds the scripts, not this list.
	bad := []string{
		`cluster_nodes |` + ` grep -qx -- "$name" || die unknown`,
		`kcat -L |` + ` grep -q "at 127.0.0.1"`,
		`list | grep -m1 x`,
		`list | grep --quiet x`,
		`list | head -n1`,
		`list | sed -n '1p;q'`,
		`out=$(cli | awk 'p {print; exit} $0 == "flags" {p = 1}')`,
	}
	good := []string{
		`# a comment: list |` + ` grep -q x`,
		`env_plain | grep -v '^export X='`,
		`awk '{print; exit}' <<<"$out"`,
		`[[ $out == *"at 127.0.0.1"* ]]`,
		`list | head -n1 # lint-scripts: ok (list is one echo)`,
	}
	dir := t.TempDir()
	for i, line := range append(bad, good...) {
		f := filepath.Join(dir, "x.sh")
		if err := os.WriteFile(f, []byte("#!/usr/bin/env bash\nset -euo pipefail\n"+line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("bash", lint, f).CombinedOutput()
		if refused := err != nil; refused != (i < len(bad)) {
			t.Errorf("lint-scripts.sh on %q: refused %v, want %v\n%s", line, refused, i < len(bad), out)
		}
	}
}

// TestGaleraStateReachableFromAPrivateCheckout: with the checkout's state in
// a private directory (mode 0700, as a root user's home or `mktemp -d` is),
// the Galera nodes' state directory is one the user they run as can write,
// and mariadb-install-db, which failed there with "Permission denied" on the
// node's own data directory, installs a data directory in it as that user.
func TestGaleraStateReachableFromAPrivateCheckout(t *testing.T) {
	testenv.NeedStack(t, "root and MariaDB's packages (stack.sh up installs them)")
	private := t.TempDir() // 0700
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(private, "checkout", ".stack")
	cmd := exec.Command("bash", filepath.Join("local", "stack.sh"), "state", "--galera")
	cmd.Env = append(os.Environ(), "FLASHSALE_STATE_DIR="+state)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("stack.sh state --galera: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if dir != filepath.Join(state, "galera") {
			_ = os.RemoveAll(dir)
		}
	})
	if os.Geteuid() != 0 {
		// The nodes run as the invoking user, who can reach its own state.
		if dir != filepath.Join(state, "galera") {
			t.Fatalf("state dir %s, want %s/galera for a non-root user", dir, state)
		}
		return
	}
	if strings.HasPrefix(dir, private) {
		t.Fatalf("state dir %s is inside the private directory %s", dir, private)
	}
	if target, err := os.Readlink(filepath.Join(state, "galera")); err != nil || target != dir {
		t.Fatalf("%s/galera links to %q (%v), want %s", state, target, err, dir)
	}
	data := filepath.Join(dir, "node-1")
	install := exec.Command("runuser", "-u", "mysql", "--", "mariadb-install-db", "--no-defaults", "--user=mysql",
		"--datadir="+data, "--auth-root-authentication-method=socket", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db as mysql into %s: %v\n%s", data, err, out)
	}
	if _, err := os.Stat(filepath.Join(data, "mysql")); err != nil {
		t.Fatalf("no system tables after the install: %v", err)
	}
}

// TestStackRestartKeepsItsPorts: a service started again (stack.sh stop,
// then start, as the fault tests do) keeps the ports recorded for it, which
// its clients hold, even when its default port is free by then. The stack
// that took 29092 because another held 9092 started Kafka again on 9092:
// every client of the test still dialled 29092, and TestKafkaStopped waited
// two minutes for a broker that was up elsewhere. It needs no server: the
// choice is the script's own (stack.sh ports SVC prints it).
func TestStackRestartKeepsItsPorts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash: %v", err)
	}
	state := t.TempDir()
	ports := func() string {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join("local", "stack.sh"), "ports", "kafka")
		cmd.Env = append(os.Environ(), "FLASHSALE_STATE_DIR="+state)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("stack.sh ports kafka: %v\n%s", err, out)
		}
		return string(out)
	}
	// Three free ports, none a default, recorded as a stack that had to move
	// would have recorded them.
	free := freePorts(t, 3)
	rec := fmt.Sprintf("KAFKA_PORT=%d\nKAFKA_CONTROLLER_PORT=%d\nKAFKA_SASL_PORT=%d\n", free[0], free[1], free[2])
	if err := os.WriteFile(filepath.Join(state, "ports"), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ports(); !strings.Contains(got, rec) {
		t.Fatalf("stack.sh ports kafka with %q recorded and free:\n%s\nwant the recorded ports kept", rec, got)
	}
	// A recorded port someone else took since is given up for another.
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", free[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := ports(); strings.Contains(got, fmt.Sprintf("KAFKA_PORT=%d\n", free[0])) {
		t.Fatalf("stack.sh ports kafka kept KAFKA_PORT %d, which another server holds:\n%s", free[0], got)
	}
}

// freePorts is n ports free on the loopback now (the kernel's choice, so
// none is a default of the stack).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
