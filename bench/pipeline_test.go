package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/httpapi"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reap"
	"github.com/flashsale-dev/flashsale/pkg/stock"
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
}

func startPipeline(t *testing.T, paymentWindow time.Duration) pipeline {
	t.Helper()
	db, dsn := testenv.MySQL(t)
	rdb := testenv.Redis(t)
	brokers := testenv.Kafka(t)
	topic, dlq, group := testenv.Topics(t, 2)
	st := stock.New(rdb)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()

	in := config.Ingress{HTTPAddr: "127.0.0.1:0", JWT: jwtconfig.JWT{JWTSecret: testSecret}, PublishTimeout: 3 * time.Second,
		SoldOutTTL: 500 * time.Millisecond, UserRateLimit: 5, IdempotencyTTL: time.Hour,
		StatusWaitMax: 30 * time.Second, StatusWaiters: 10_000}
	w := orderlog.NewWriter(brokers, topic, in.PublishTimeout)
	srv, err := httpapi.New(httpapi.Config{Ingress: in, StoreTimeout: 2 * time.Second, Brokers: brokers, Topic: topic, Group: group},
		httpapi.Deps{DB: db, Stock: st, Publisher: w, Registry: reg, Log: log})
	if err != nil {
		t.Fatalf("ingress: %v", err)
	}
	ts := httptest.NewServer(srv.Echo())
	opsTS := httptest.NewServer(srv.Ops())

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	om := orderwriter.NewMetrics(reg)
	for range 2 {
		c, err := orderwriter.New(orderwriter.Config{Brokers: brokers, Topic: topic, DLQTopic: dlq, GroupID: group,
			PaymentWindow: paymentWindow, HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 6 * time.Second,
			RebalanceTimeout: 6 * time.Second}, orderwriter.Deps{DB: db, Stock: st}, om, log)
		if err != nil {
			t.Fatalf("consumer: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("consumer: %v", err)
			}
		}()
	}
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
		ts.Close()
		opsTS.Close()
		cancel()
		wg.Wait()
		_ = w.Close()
	})
	c := testenv.Common(t)
	c.MySQLDSN = dsn
	return pipeline{URL: ts.URL, Common: c, Brokers: brokers, Topic: topic, Group: group, MetricsURL: opsTS.URL + "/metrics"}
}

// testSettings are a short run's settings: small N, a stock that sells out,
// a few duplicates, replays and payers.
func testSettings(target string) Settings {
	return Settings{Target: target, Buyers: 400, Units: 40, Rate: 400, DupFraction: 0.05, ReplayFraction: 0.05,
		PayFraction: 0.5, JWTSecret: testSecret, PollTimeout: 30 * time.Second, PollInterval: 100 * time.Millisecond,
		ReapWait: 20 * time.Second, RequestTimeout: 10 * time.Second, Seed: 7, BaselineDB: "flashsale_bench_t" + testenv.Suffix(), Baselines: "a,b", Quiet: true}
}
