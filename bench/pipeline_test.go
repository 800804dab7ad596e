package main

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/inproc"
	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

const testSecret = "bench-test-secret-0123456789"

// pipeline is the whole of flashsale started in-process on the real local
// stack, isolated per test (own database, topics, group): the ingress behind
// an httptest server, two order writers and a reaper.
type pipeline struct {
	URL     string
	Common  config.Common
	Brokers []string
	Topic   string
	Group   string
	// MetricsURL is the ingress's /metrics on its ops handler.
	MetricsURL string
	// DB is the pipeline's own database.
	DB *sql.DB
}

func startPipeline(t *testing.T, paymentWindow time.Duration) pipeline {
	t.Helper()
	stk := inproc.New(t)
	db, rdb := stk.DB, stk.Redis
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()

	in := config.Ingress{HTTPAddr: "127.0.0.1:0", JWT: jwtconfig.JWT{JWTSecret: testSecret}, PublishTimeout: 3 * time.Second,
		SoldOutTTL: 500 * time.Millisecond, UserRateLimit: 5, IdempotencyTTL: time.Hour,
		StatusWaitMax: 30 * time.Second, StatusWaiters: 10_000}
	srv := stk.Ingress(t, in, inproc.Options{Registry: reg, Log: log})
	st := srv.Stock
	opsTS := httptest.NewServer(srv.Ops())

	om := orderwriter.NewMetrics(reg)
	for range 2 {
		stk.Consumer(t, orderwriter.Config{PaymentWindow: paymentWindow, HeartbeatInterval: 500 * time.Millisecond,
			SessionTimeout: 6 * time.Second, RebalanceTimeout: 6 * time.Second}, st, om, log)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	r := reap.New(reap.Config{Interval: 300 * time.Millisecond, OrphanGrace: time.Minute, StoreTimeout: 2 * time.Second}, reap.Deps{DB: db, Stock: st}, reap.NewMetrics(reg), log)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = r.Run(ctx)
	}()
	// The waiting room's gate, as the reaper runs it (its default pace),
	// under a lease of this test's own on the shared Redis.
	g := waitroom.NewGate(waitroom.GateConfig{LeaseKey: "fs:test:gate:" + testenv.Suffix() + t.Name(), StoreTimeout: 2 * time.Second}, db, rdb, waitroom.NewGateMetrics(reg), log)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = g.Run(ctx)
	}()
	t.Cleanup(func() {
		opsTS.Close()
		cancel()
		wg.Wait()
	})
	c := testenv.Common(t)
	c.MySQLDSN = stk.DSN
	return pipeline{URL: srv.URL, Common: c, Brokers: stk.Brokers, Topic: stk.Topic, Group: stk.Group, MetricsURL: opsTS.URL + "/metrics", DB: db}
}

// testSettings are a short run's settings: small N, a stock that sells out,
// a few duplicates, replays and payers.
func testSettings(target string) Settings {
	return Settings{Target: target, Buyers: 400, Units: 40, Rate: 400, DupFraction: 0.05, ReplayFraction: 0.05,
		PayFraction: 0.5, JWTSecret: testSecret, PollTimeout: 30 * time.Second, PollInterval: 100 * time.Millisecond,
		ReapWait: 20 * time.Second, RequestTimeout: 10 * time.Second, Seed: 7, BaselineDB: "flashsale_bench_t" + testenv.Suffix(), Baselines: "a,b", Quiet: true}
}
