package inproc

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/admission"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/httpapi"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// Stack is a test's own slice of the local stack: a database and order
// topics of its own (dropped when the test ends), and the shared Redis.
type Stack struct {
	DB                *sql.DB
	DSN               string
	Redis             redis.UniversalClient
	Brokers           []string
	Topic, DLQ, Group string
}

// New takes a slice of the stack for t; a test that needs the stack skips
// under -short with its reason (testenv).
func New(t testing.TB) *Stack {
	t.Helper()
	db, dsn := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	brokers := testenv.Kafka(t)
	topic, dlq, group := testenv.Topics(t, 2)
	return &Stack{DB: db, DSN: dsn, Redis: rdb, Brokers: brokers, Topic: topic, DLQ: dlq, Group: group}
}

// Settings are the ingress settings the in-process tests share, signing
// with secret: a 3 s publish timeout, a 500 ms sold-out cache, an hour of
// Idempotency-Key records, and buckets gathered for up to a second.
func Settings(secret string) config.Ingress {
	return config.Ingress{JWT: jwtconfig.JWT{JWTSecret: secret}, PublishTimeout: 3 * time.Second, SoldOutTTL: 500 * time.Millisecond,
		IdempotencyTTL: time.Hour, Buckets: config.Buckets{Max: 64, Wait: time.Second, Poll: 25 * time.Millisecond}}
}

// Options are an ingress's parts that a test may bring itself; a zero
// field takes the default named beside it.
type Options struct {
	// Stock is the admission ledger; default stock.New(s.Redis).
	Stock *stock.Store
	// Publisher is the orders' producer; default orderlog.NewWriter on the
	// stack's topic, closed when the test ends.
	Publisher admission.Publisher
	// Registry gets the ingress's metrics; default a new one.
	Registry *prometheus.Registry
	// Log is the ingress's logger; default testenv.LogTail(t).
	Log *slog.Logger
	// StoreTimeout bounds each Redis and MySQL call; default 2 s.
	StoreTimeout time.Duration
}

// Ingress is the ingress's code serving on a real listener at URL.
type Ingress struct {
	*httpapi.Server
	URL      string
	Stock    *stock.Store
	Settings config.Ingress
}

// Ingress starts the ingress with settings in on s, behind an httptest
// server; both are closed when the test ends.
func (s *Stack) Ingress(t testing.TB, in config.Ingress, o Options) *Ingress {
	t.Helper()
	if o.Stock == nil {
		o.Stock = stock.New(s.Redis)
	}
	if o.Publisher == nil {
		w := orderlog.NewWriter(s.Brokers, s.Topic, in.PublishTimeout)
		t.Cleanup(func() { _ = w.Close() })
		o.Publisher = w
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.Log == nil {
		o.Log = testenv.LogTail(t)
	}
	if o.StoreTimeout == 0 {
		o.StoreTimeout = 2 * time.Second
	}
	srv, err := httpapi.New(httpapi.Config{Ingress: in, StoreTimeout: o.StoreTimeout, Brokers: s.Brokers, Topic: s.Topic, DLQTopic: s.DLQ, Group: s.Group},
		httpapi.Deps{DB: s.DB, Stock: o.Stock, Publisher: o.Publisher, Registry: o.Registry, Log: o.Log, OpenAPI: []byte("openapi: 3.0.3\n")})
	if err != nil {
		t.Fatalf("ingress: %v", err)
	}
	hs := httptest.NewServer(srv.Echo())
	t.Cleanup(func() {
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
	})
	return &Ingress{Server: srv, URL: hs.URL, Stock: o.Stock, Settings: in}
}

// Consumer starts an order writer with cfg on s (its brokers, topics and
// group are the stack's), writing to s.DB and settling marks in st, until
// the test ends; a Run that fails fails the test (testenv.Background).
func (s *Stack) Consumer(t testing.TB, cfg orderwriter.Config, st *stock.Store, m *orderwriter.Metrics, log *slog.Logger) {
	t.Helper()
	cfg.Brokers, cfg.Topic, cfg.DLQTopic, cfg.GroupID = s.Brokers, s.Topic, s.DLQ, s.Group
	if m == nil {
		m = orderwriter.NewMetrics(prometheus.NewRegistry())
	}
	if log == nil {
		log = testenv.LogTail(t)
	}
	c, err := orderwriter.New(cfg, orderwriter.Deps{DB: s.DB, Stock: st}, m, log)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	testenv.Background(t, "consumer", c.Run)
}
