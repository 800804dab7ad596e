//go:build faults

package faults

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

const jwtSecret = "faults-suite-secret-0123456789abcdef"

// settings are the short windows of a fault run; a test may change them
// before start.
type settings struct {
	PaymentWindow  time.Duration
	OrphanGrace    time.Duration
	ReapInterval   time.Duration
	ReapBatch      int
	PublishTimeout time.Duration
	StoreTimeout   time.Duration
	BatchSize      int
	Consumers      int
	Reapers        int
	Partitions     int
	Units          int
	// Buckets is the item's stock bucket count (0 or 1: unbucketed).
	Buckets int
	// ClaimWindow is the reapers' FLASHSALE_QUEUE_CLAIM_WINDOW (0: their
	// default).
	ClaimWindow time.Duration
}

func defaultSettings() settings {
	return settings{
		PaymentWindow: 4 * time.Second, OrphanGrace: 10 * time.Second, ReapInterval: 500 * time.Millisecond,
		ReapBatch: 50, PublishTimeout: 2 * time.Second, StoreTimeout: time.Second, BatchSize: 50,
		Consumers: 2, Reapers: 1, Partitions: 2, Units: 80,
	}
}

// pipeline is one isolated flashsale deployment: fresh database, topics and
// group, an item of its own, and the three deployables as processes.
type pipeline struct {
	t      *testing.T
	cfg    settings
	db     *sql.DB
	dsn    string
	rdb    redis.UniversalClient
	st     *stock.Store
	kafka  []string
	orders string
	dlq    string
	group  string
	itemID int64

	ingress   *proc
	consumers []*proc
	reapers   []*proc
	base      string
	http      *http.Client
	admin     string

	// tolerated names the invariants a test expects may break, with why:
	// settle reports their violations instead of failing (a Redis failover
	// without FLASHSALE_REDIS_WAIT_REPLICAS may drift Redis from MySQL).
	tolerated map[string]string
}

func newPipeline(t *testing.T, cfg settings) *pipeline {
	t.Helper()
	common := testenv.Common(t)
	db, dsn := testenv.MySQL(t)
	p := &pipeline{t: t, cfg: cfg, db: db, dsn: dsn, rdb: testenv.Redis(t), kafka: testenv.Kafka(t), itemID: testenv.ItemID()}
	p.st = stock.New(p.rdb)
	p.orders, p.dlq, p.group = testenv.Topics(t, cfg.Partitions)
	p.http = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxIdleConns: 128}}
	t.Cleanup(p.http.CloseIdleConnections)
	tok, err := auth.Sign(jwtSecret, 1, auth.RoleAdmin, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p.admin = "Bearer " + tok

	base := map[string]string{
		"MYSQL_DSN": dsn, "REDIS_ADDR": common.RedisAddr, "KAFKA_BROKERS": common.KafkaBrokers,
		"PAYMENT_WINDOW": cfg.PaymentWindow.String(), "STORE_TIMEOUT": cfg.StoreTimeout.String(),
		"SHUTDOWN_TIMEOUT": "5s", "LOG_LEVEL": "info",
		"ORDERS_TOPIC": p.orders, "DLQ_TOPIC": p.dlq, "CONSUMER_GROUP": p.group,
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	addr, opsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	p.base = "http://" + addr
	// health is on the ops port (/readyz, /metrics live there); the ingress
	// binds both ports before it serves either.
	p.ingress = newProc(t, "ingress", "ingress", with(map[string]string{
		"HTTP_ADDR": addr, "METRICS_ADDR": opsAddr, "JWT_SECRET": jwtSecret, "PUBLISH_TIMEOUT": cfg.PublishTimeout.String(),
		"USER_RATE_LIMIT": "0", "IP_RATE_LIMIT": "0",
	}), "http://"+opsAddr+"/healthz")
	for i := range cfg.Consumers {
		a := testenv.FreeAddr(t)
		p.consumers = append(p.consumers, newProc(t, fmt.Sprintf("consumer-%d", i), "consumer", with(map[string]string{
			"METRICS_ADDR": a, "BATCH_SIZE": strconv.Itoa(cfg.BatchSize),
			// The brokers' shortest session: a SIGKILLed consumer's
			// partitions move after 6 s, not the default 30 s, which is
			// what every kill in this suite waited for.
			"GROUP_SESSION_TIMEOUT": "6s",
		}), "http://"+a+"/healthz"))
	}
	for i := range cfg.Reapers {
		p.reapers = append(p.reapers, p.newReaper(with, i))
	}
	return p
}

func (p *pipeline) newReaper(with func(map[string]string) map[string]string, i int) *proc {
	a := testenv.FreeAddr(p.t)
	env := map[string]string{
		"METRICS_ADDR": a, "REAP_INTERVAL": p.cfg.ReapInterval.String(), "ORPHAN_GRACE": p.cfg.OrphanGrace.String(),
		"REAP_BATCH": strconv.Itoa(p.cfg.ReapBatch),
		// The shared Redis holds every other test's items: sweeping items
		// this test's database lacks would void theirs, and a backlog of
		// them (61,898 in one run) kept the expiry pass from running.
		"SWEEP_UNKNOWN_ITEMS": "false",
		// The live auditor every second, not every 15: a fault test
		// lasts tens of seconds, and settle holds every warning it
		// logs against the final audit (no false alarms).
		"AUDIT_INTERVAL": "1s",
	}
	if p.cfg.ClaimWindow > 0 {
		env["QUEUE_CLAIM_WINDOW"] = p.cfg.ClaimWindow.String()
	}
	return newProc(p.t, fmt.Sprintf("reaper-%d", i), "reaper", with(env), "http://"+a+"/healthz")
}

// startAll starts every process and creates the sale item (warming Redis).
func (p *pipeline) startAll() {
	p.t.Helper()
	p.startProcesses()
	p.createItem()
}

// startProcesses starts every deployable and waits for the consumers'
// group, without creating the pipeline's item (for tests that create items
// of their own).
func (p *pipeline) startProcesses() {
	p.t.Helper()
	p.ingress.start()
	for _, c := range p.consumers {
		c.start()
	}
	for _, r := range p.reapers {
		r.start()
	}
	p.waitGroup()
}

// waitGroup waits until every consumer has joined the test's own group: a
// consumer main that ignores FLASHSALE_CONSUMER_GROUP or FLASHSALE_ORDERS_TOPIC
// would otherwise show up only as a lag that never drains.
func (p *pipeline) waitGroup() {
	p.t.Helper()
	if len(p.consumers) == 0 {
		return
	}
	c := &kafka.Client{Addr: kafka.TCP(p.kafka...)}
	var last string
	testenv.Eventually(p.t, time.Minute, 200*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		res, err := c.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{p.group}})
		if err != nil || len(res.Groups) != 1 {
			last = fmt.Sprint(err)
			return false
		}
		g := res.Groups[0]
		n := 0
		for _, m := range g.Members {
			for _, tp := range m.MemberAssignments.Topics {
				if tp.Topic == p.orders {
					n++
				}
			}
		}
		last = fmt.Sprintf("state %q, %d members, %d assigned %s", g.GroupState, len(g.Members), n, p.orders)
		return n == len(p.consumers)
	}, "consumers never joined group %s on topic %s (%v): does consumer/main.go pass FLASHSALE_CONSUMER_GROUP and FLASHSALE_ORDERS_TOPIC to orderwriter.Config?",
		p.group, p.orders, lazy(func() string { return last }))
}

// ensureRunning starts whatever a fault left stopped.
func (p *pipeline) ensureRunning() {
	p.t.Helper()
	for _, pr := range append(append([]*proc{p.ingress}, p.consumers...), p.reapers...) {
		if !pr.running() {
			pr.kill() // reap a process that died by itself
			pr.start()
		}
	}
}

func (p *pipeline) createItem() {
	p.t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	body := map[string]any{"name": "fault item", "price_cents": 1999, "stock": p.cfg.Units, "per_user_limit": 1,
		"starts_at": now.Add(-time.Minute), "ends_at": now.Add(2 * time.Hour)}
	if p.cfg.Buckets > 1 {
		body["buckets"] = p.cfg.Buckets
	}
	code, b := p.call(context.Background(), http.MethodPut, p.itemPath(""), p.admin, body, nil)
	if code != http.StatusOK {
		p.t.Fatalf("create item: %d %s", code, b)
	}
}

func (p *pipeline) itemPath(suffix string) string {
	return "/api/v1/admin/items/" + strconv.FormatInt(p.itemID, 10) + suffix
}

// call sends one JSON request; code 0 means no answer (connection error).
func (p *pipeline) call(ctx context.Context, method, path, bearer string, in any, header map[string]string) (int, []byte) {
	req, err := testenv.JSONRequest(ctx, method, p.base+path, bearer, in, header)
	if err != nil {
		return 0, []byte(err.Error())
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b
}

// bearer returns a buyer's Authorization header.
func (p *pipeline) bearer(user int64) string {
	tok, err := auth.Sign(jwtSecret, user, "", 2*time.Hour)
	if err != nil {
		p.t.Fatal(err)
	}
	return "Bearer " + tok
}

// warm calls the admin warm until it is accepted (409 while requests are
// in flight), within timeout.
func (p *pipeline) warm(timeout time.Duration) {
	p.t.Helper()
	var last string
	testenv.Eventually(p.t, timeout, 500*time.Millisecond, func() bool {
		code, b := p.call(context.Background(), http.MethodPost, p.itemPath("/warm"), p.admin, nil, nil)
		last = fmt.Sprintf("%d %s", code, strings.TrimSpace(string(b)))
		return code == http.StatusOK
	}, "admin warm never accepted; last answer: %v", lazy(func() string { return last }))
	p.t.Logf("admin warm: %s", last)
}

// lazy formats as the value of its function at print time, for failure
// messages of polls whose last observation is what explains the failure.
type lazy func() string

func (l lazy) String() string { return l() }
