package ctl

import (
	"bytes"
	"context"
	"database/sql"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/devtoken"
	"github.com/flashsale-dev/flashsale/pkg/httpapi"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
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
	db, dsn := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	brokers := testenv.Kafka(t)
	topic, dlq, group := testenv.Topics(t, 2)
	in := config.Ingress{JWT: jwtconfig.JWT{JWTSecret: stackSecret, JWTAudience: "flashsale", JWTMaxTTL: 24 * time.Hour, JWTUserClaim: "sub",
		JWTRoleClaim: "role", JWTAdminRole: "admin"}, PublishTimeout: 3 * time.Second, SoldOutTTL: 500 * time.Millisecond,
		IdempotencyTTL: time.Hour, Buckets: config.Buckets{Max: 64, Wait: time.Second, Poll: 25 * time.Millisecond},
		TallyFlush: 100 * time.Millisecond}
	w := orderlog.NewWriter(brokers, topic, in.PublishTimeout)
	t.Cleanup(func() { _ = w.Close() })
	st := stock.New(rdb)
	srv, err := httpapi.New(httpapi.Config{Ingress: in, StoreTimeout: 2 * time.Second, Brokers: brokers, Topic: topic, DLQTopic: dlq, Group: group},
		httpapi.Deps{DB: db, Stock: st, Publisher: w, Registry: prometheus.NewRegistry(), Log: testenv.LogTail(t), OpenAPI: []byte("openapi: 3.0.3\n")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	hs := httptest.NewServer(srv.Echo())
	t.Cleanup(hs.Close)
	env := map[string]string{"FLASHSALE_URL": hs.URL, "FLASHSALE_JWT_SECRET": stackSecret}
	g := &ingress{url: hs.URL, db: db, dsn: dsn, brokers: brokers, topic: topic, dlq: dlq, group: group, env: env, stock: st}
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
