package ctl

import (
	"bytes"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/inproc"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/devtoken"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

const stackSecret = "ctl-test-secret-0123456789abcdef"

// ingress is a real ingress (pkg/httpapi, the code of the ingress binary)
// on the real stack, behind a real HTTP listener: its own database and
// topics, the shared Redis.
type ingress struct {
	url               string
	db                *sql.DB
	dsn               string
	brokers           []string
	topic, dlq, group string
	env               map[string]string
	stock             *stock.Store
}

func startIngress(t *testing.T) *ingress {
	t.Helper()
	s := inproc.New(t)
	in := inproc.Settings(stackSecret)
	in.JWT = jwtconfig.JWT{JWTSecret: stackSecret, JWTAudience: "flashsale", JWTMaxTTL: 24 * time.Hour, JWTUserClaim: "sub",
		JWTRoleClaim: "role", JWTAdminRole: "admin"}
	in.TallyFlush = 100 * time.Millisecond
	srv := s.Ingress(t, in, inproc.Options{})
	env := map[string]string{"FLASHSALE_URL": srv.URL, "FLASHSALE_JWT_SECRET": stackSecret}
	g := &ingress{url: srv.URL, db: s.DB, dsn: s.DSN, brokers: s.Brokers, topic: s.Topic, dlq: s.DLQ, group: s.Group, env: env, stock: srv.Stock}
	g.env["FLASHSALE_TOKEN"] = g.mint(t, 1, true)
	return g
}

func (g *ingress) mint(t *testing.T, user int64, admin bool) string {
	t.Helper()
	in, err := devtoken.Settings(g.lookup)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := devtoken.Mint(in, user, admin, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (g *ingress) lookup(k string) (string, bool) { v, ok := g.env[k]; return v, ok }

// run is flashsalectl args against g: exit code, stdout, stderr.
func run(t *testing.T, lookup func(string) (string, bool), args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, Env{Lookup: lookup, Stdout: &out, Stderr: &errb, Sleep: func(time.Duration) {}})
	return code, out.String(), errb.String()
}

func mustRun(t *testing.T, lookup func(string) (string, bool), args ...string) string {
	t.Helper()
	code, out, errs := run(t, lookup, args...)
	if code != 0 {
		t.Fatalf("flashsalectl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}
