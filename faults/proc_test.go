//go:build faults

package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// proc is one deployable running as an OS process with its own environment.
// Its output goes to a log file under the test's temp dir; the tail is
// printed when the test fails.
type proc struct {
	t    testing.TB
	name string
	bin  string
	env  []string
	log  string
	// health is the URL whose 200 means the process is serving.
	health string
	// launch makes the command for bin (nil: run it here); the network
	// faults run it inside a test host (hosts_test.go).
	launch func(bin string) *exec.Cmd

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	runs int
}

func newProc(t testing.TB, name, bin string, env map[string]string, health string) *proc {
	p := &proc{t: t, name: name, bin: filepath.Join(binDir, bin), env: processEnv(env),
		log: filepath.Join(t.TempDir(), name+".log"), health: health}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("---- %s log tail (%s) ----\n%s", name, p.log, tail(p.log, 40))
		}
	})
	return p
}

// processEnv is the parent's environment without any FLASHSALE_* setting,
// plus env: a process sees only what the test chose.
func processEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLASHSALE_") {
			out = append(out, kv)
		}
	}
	for k, v := range env {
		out = append(out, "FLASHSALE_"+k+"="+v)
	}
	return out
}

// start launches the process and waits until its health URL answers 200.
func (p *proc) start() {
	p.t.Helper()
	p.mu.Lock()
	if p.cmd != nil {
		p.mu.Unlock()
		return
	}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.mu.Unlock()
		p.t.Fatalf("%s: log: %v", p.name, err)
	}
	p.runs++
	fmt.Fprintf(f, "==== start #%d at %s ====\n", p.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin)
	if p.launch != nil {
		cmd = p.launch(p.bin)
	}
	cmd.Env, cmd.Stdout, cmd.Stderr = p.env, f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		p.mu.Unlock()
		p.t.Fatalf("%s: start: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()

	client := &http.Client{Timeout: time.Second}
	testenv.Eventually(p.t, 30*time.Second, 50*time.Millisecond, func() bool {
		select {
		case <-done:
			p.t.Fatalf("%s exited during start-up:\n%s", p.name, tail(p.log, 30))
		default:
		}
		resp, err := client.Get(p.health)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "%s not healthy at %s", p.name, p.health)
}

// kill sends SIGKILL (no shutdown code runs: a crash) and reaps the process.
func (p *proc) kill() { p.signal(syscall.SIGKILL, 0) }

// stop asks for a graceful shutdown, SIGKILL after 20s.
func (p *proc) stop() { p.signal(syscall.SIGTERM, 20*time.Second) }

func (p *proc) signal(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.cmd, p.done = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if grace > 0 {
		select {
		case <-done:
			return
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	<-done
}

// restart kills and starts again.
func (p *proc) restart() {
	p.t.Helper()
	p.kill()
	p.start()
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// grepLog counts the log lines containing s.
func (p *proc) grepLog(s string) int { return len(p.logLines(s)) }

// logLines returns the log lines containing s.
func (p *proc) logLines(s string) []string {
	b, _ := os.ReadFile(p.log)
	var out []string
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, s) {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return out
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stack drives deploy/local/stack.sh: the only way these tests stop, pause
// or wipe a server.
type stack struct {
	t      testing.TB
	script string
}

// stackUsed is set once a test drives the shared stack: only then does
// TestMain restore it (a run of the network faults alone, whose servers
// are their own, leaves the shared stack alone).
var stackUsed atomic.Bool

func newStack(t testing.TB) stack {
	stackUsed.Store(true)
	return stack{t: t, script: testenv.StackScript(t)}
}

func (s stack) run(args ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, s.script, args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("stack.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	s.t.Logf("stack.sh %s (%v): %s", strings.Join(args, " "), time.Since(start).Round(10*time.Millisecond), strings.TrimSpace(string(out)))
}

// quiet runs a restoring command in cleanup: errors are logged, not fatal.
func (s stack) quiet(args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, s.script, args...).CombinedOutput()
	if err != nil {
		s.t.Logf("cleanup: stack.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// stop stops svc and makes sure it is started again when the test ends.
func (s stack) stop(svc string) {
	s.t.Helper()
	s.t.Cleanup(func() { s.quiet("start", svc) })
	s.run("stop", svc)
}

func (s stack) start(svc string) { s.t.Helper(); s.run("start", svc) }

// pause black-holes svc (SIGSTOP) and makes sure it is resumed at the end.
func (s stack) pause(svc string) {
	s.t.Helper()
	s.t.Cleanup(func() { s.quiet("resume", svc) })
	s.run("pause", svc)
}

func (s stack) resume(svc string) { s.t.Helper(); s.run("resume", svc) }

// wipeRedis restarts Redis empty; the cleanup only makes sure it runs.
func (s stack) wipeRedis() {
	s.t.Helper()
	s.t.Cleanup(func() { s.quiet("start", "redis") })
	s.run("wipe-redis")
}
