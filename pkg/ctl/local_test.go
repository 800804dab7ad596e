package ctl

import (
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/auth"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestTokenCommand: the token is the stack's (it verifies with the
// secret, admin only with --admin), and under a JWK Set it is refused
// naming the setting, exit 1, nothing on stdout.
func TestTokenCommand(t *testing.T) {
	env := envOf(map[string]string{"FLASHSALE_JWT_SECRET": "ctl-local-0123456789abcdef"})
	tok := strings.TrimSpace(mustRun(t, env, "token", "--admin", "--sub", "9", "--ttl", "10m"))
	p, err := auth.NewVerifier("ctl-local-0123456789abcdef").Verify(tok)
	if err != nil || p.UserID != 9 || !p.Admin {
		t.Fatalf("minted token: %+v %v", p, err)
	}
	code, out, errs := run(t, envOf(map[string]string{"FLASHSALE_JWT_JWKS_URL": "https://id.example/certs"}), "token", "--admin")
	if code != ExitAPI || out != "" || !strings.Contains(errs, "FLASHSALE_JWT_JWKS_URL") || !strings.Contains(errs, "identity provider") {
		t.Fatalf("under a JWK Set: exit %d stdout %q stderr %q", code, out, errs)
	}
	_ = time.Second
}

// TestCompletionScripts: cobra's completion command writes a script for
// each shell, naming the program.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		out := mustRun(t, envOf(nil), "completion", sh)
		if len(out) < 500 || !strings.Contains(out, "flashsalectl") {
			t.Errorf("completion %s: %d bytes", sh, len(out))
		}
	}
	// The dynamic part: completing -o offers the two outputs.
	out := mustRun(t, envOf(nil), "__complete", "items", "list", "-o", "")
	if !strings.Contains(out, "table") || !strings.Contains(out, "json") {
		t.Errorf("__complete -o: %q", out)
	}
}

// TestHelp: every command has help, and the root's names the exit codes
// and the settings.
func TestHelp(t *testing.T) {
	out := mustRun(t, envOf(nil), "--help")
	for _, want := range []string{"FLASHSALE_URL", "FLASHSALE_TOKEN", "Exit codes", "items", "audit", "sale", "queue", "dlq", "token", "completion"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	for _, c := range [][]string{{"items", "create", "--help"}, {"sale", "watch", "--help"}, {"dlq", "replay", "--help"}, {"token", "--help"},
		{"queue", "show", "--help"}, {"queue", "transcript", "--help"}} {
		if out := mustRun(t, envOf(nil), c...); !strings.Contains(out, "Usage:") {
			t.Errorf("%v: %q", c, out)
		}
	}
	if code, _, _ := run(t, envOf(nil), "items", "get"); code != ExitUsage {
		t.Errorf("items get without an id: exit %d, want 2", code)
	}
	if code, _, _ := run(t, envOf(nil), "nonsense"); code != ExitUsage {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}
