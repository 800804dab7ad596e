package scenarios

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/auth"
)

const jwtSecret = "scenarios-suite-secret-0123456789abcdef"

// paymentWindow is the deployment's payment window: short, so the
// payment-window scenario lapses within seconds.
const paymentWindow = 3 * time.Second

// system is one deployment seen from outside: an ingress, two consumers
// and a reaper (whose rebalancer runs at its default 100 ms) as OS
// processes on a database, topics and group of their own. Every setting
// not named here is the deployables' default, as an operator deploys them
// (the per-user rate limit of 5 per second included). The scenarios talk
// to it over HTTP only, and read MySQL only to count orders.
type system struct {
	t     *testing.T
	db    *sql.DB
	base  string
	http  *http.Client
	admin string
}

var (
	sysOnce sync.Once
	sys     *system
	sysErr  string
	procs   []*exec.Cmd
)

// onEveryLayout runs scenario on the shared system once per entry of
// bucketCounts, each a subtest named buckets=N.
func onEveryLayout(t *testing.T, scenario func(t *testing.T, s *system, buckets int)) {
	for _, buckets := range bucketCounts {
		t.Run(fmt.Sprintf("buckets=%d", buckets), func(t *testing.T) {
			scenario(t, shared(t), buckets)
		})
	}
}

// shared starts the deployment once for the package (a few seconds) and
// returns it for t; TestMain stops it (stopAll) when every test has run.
// The scenarios run one after another, never in parallel: "nobody else on
// the system" is part of what some of them check.
func shared(t *testing.T) *system {
	t.Helper()
	testenv.NeedStack(t, "the whole pipeline on the stack")
	sysOnce.Do(func() { sys = start(t) })
	if sys == nil {
		t.Fatalf("deployment did not start: %s", sysErr)
	}
	sys.t = t
	return sys
}

func start(t *testing.T) *system {
	common := testenv.Common(t)
	pkg := &holder{TB: t}
	db, dsn := testenv.MySQL(pkg)
	orders, dlq, group := testenv.Topics(pkg, 8)
	dropDB = pkg.run
	tok, err := auth.Sign(jwtSecret, 1, auth.RoleAdmin, 2*time.Hour)
	if err != nil {
		sysErr = err.Error()
		return nil
	}
	s := &system{db: db, admin: "Bearer " + tok,
		http: &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256}}}
	env := map[string]string{
		"MYSQL_DSN": dsn, "REDIS_ADDR": common.RedisAddr, "KAFKA_BROKERS": common.KafkaBrokers,
		"PAYMENT_WINDOW": paymentWindow.String(), "LOG_LEVEL": "info",
		"ORDERS_TOPIC": orders, "DLQ_TOPIC": dlq, "CONSUMER_GROUP": group,
	}
	addr, ops := testenv.FreeAddr(t), testenv.FreeAddr(t)
	s.base = "http://" + addr
	logs := logDir()
	run := func(name, bin, health string, extra map[string]string) bool {
		m := map[string]string{}
		for k, v := range env {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		if err := launch(name, bin, health, m, logs); err != nil {
			sysErr = err.Error()
			return false
		}
		return true
	}
	if !run("ingress", "ingress", "http://"+ops+"/healthz", map[string]string{"HTTP_ADDR": addr, "METRICS_ADDR": ops, "JWT_SECRET": jwtSecret}) {
		return nil
	}
	for i := range 2 {
		a := testenv.FreeAddr(t)
		if !run(fmt.Sprintf("consumer-%d", i), "consumer", "http://"+a+"/healthz", map[string]string{"METRICS_ADDR": a}) {
			return nil
		}
	}
	a := testenv.FreeAddr(t)
	// The shared test Redis holds other packages' items: this reaper must
	// leave them alone (they are not in its database).
	if !run("reaper", "reaper", "http://"+a+"/healthz", map[string]string{"METRICS_ADDR": a,
		"REAP_INTERVAL": "250ms", "SWEEP_UNKNOWN_ITEMS": "false"}) {
		return nil
	}
	t.Logf("deployment up: ingress %s, logs in %s", s.base, logs)
	return s
}

var (
	dropDB  func() // the deployment's database and Kafka topics
	logPath string
)

func logDir() string {
	if logPath == "" {
		logPath, _ = os.MkdirTemp("", "flashsale-scenarios-logs-")
	}
	return logPath
}

// holder is a testing.TB whose cleanups run when the package ends, not when
// the test that started the deployment ends: the deployment serves every
// test of the package, so its database and its Kafka topics go in stopAll.
type holder struct {
	testing.TB
	mu  sync.Mutex
	fns []func()
}

func (h *holder) Cleanup(f func()) { h.mu.Lock(); h.fns = append(h.fns, f); h.mu.Unlock() }

func (h *holder) run() {
	h.mu.Lock()
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// stopAll kills the deployment's processes, then drops its database and deletes its topics.
func stopAll(failed bool) {
	for _, c := range procs {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range procs {
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	if dropDB != nil {
		dropDB()
	}
	if logPath != "" && !failed {
		os.RemoveAll(logPath)
	} else if logPath != "" {
		fmt.Fprintf(os.Stderr, "scenarios: process logs kept in %s\n", logPath)
	}
}

// launch starts one deployable with only the FLASHSALE_* settings given and
// waits until its health URL answers 200.
func launch(name, bin, health string, env map[string]string, logs string) error {
	f, err := os.Create(filepath.Join(logs, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(binDir, bin))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLASHSALE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, "FLASHSALE_"+k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: start: %w", name, err)
	}
	procs = append(procs, cmd)
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); <-tick.C {
		resp, err := client.Get(health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	b, _ := os.ReadFile(f.Name())
	return fmt.Errorf("%s not healthy at %s within 30s; log:\n%s", name, health, b)
}

// answer is one HTTP answer as a client sees it.
type answer struct {
	Code       int
	Error      string // the error code of an error body
	RequestID  string
	RetryAfter string
	Body       []byte
	Sent, Got  time.Time
}

func (a answer) String() string {
	if a.Error != "" {
		return fmt.Sprintf("%d %s", a.Code, a.Error)
	}
	return strconv.Itoa(a.Code)
}

func (s *system) call(method, path, bearer string, in any, header map[string]string) answer {
	a := answer{Sent: time.Now()}
	req, err := testenv.JSONRequest(context.Background(), method, s.base+path, bearer, in, header)
	if err != nil {
		a.Body = []byte(err.Error())
		return a
	}
	resp, err := s.http.Do(req)
	a.Got = time.Now()
	if err != nil {
		a.Body = []byte(err.Error())
		return a
	}
	defer resp.Body.Close()
	a.Code = resp.StatusCode
	a.RetryAfter = resp.Header.Get("Retry-After")
	a.Body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var v struct {
		Error     string `json:"error"`
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(a.Body, &v)
	a.Error, a.RequestID = v.Error, v.RequestID
	return a
}

func (s *system) bearer(user int64) string {
	tok, err := auth.Sign(jwtSecret, user, "", 2*time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	return "Bearer " + tok
}

// newItem creates an item on sale now, as an operator does: PUT (which
// warms Redis), with buckets and the per-user limit.
func (s *system) newItem(units, buckets, limit int) int64 {
	s.t.Helper()
	id := testenv.ItemID()
	now := time.Now().UTC().Truncate(time.Millisecond)
	body := map[string]any{"name": "scenario item", "price_cents": 1999, "stock": units, "per_user_limit": limit,
		"starts_at": now.Add(-time.Minute), "ends_at": now.Add(2 * time.Hour), "buckets": buckets}
	a := s.call(http.MethodPut, itemPath(id, ""), s.admin, body, nil)
	if a.Code != http.StatusOK {
		s.t.Fatalf("create item: %s %s", a, a.Body)
	}
	return id
}

func itemPath(id int64, suffix string) string {
	return "/api/v1/admin/items/" + strconv.FormatInt(id, 10) + suffix
}

// order is POST /api/v1/orders; key "" sends no Idempotency-Key.
func (s *system) order(item, user int64, qty int, key string) answer {
	h := map[string]string{}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return s.call(http.MethodPost, "/api/v1/orders", s.bearer(user), map[string]any{"item_id": item, "qty": qty}, h)
}

// status is GET /api/v1/orders/{rid}?wait=.
type status struct {
	RequestID string `json:"request_id"`
	Qty       int    `json:"qty"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
}

func (s *system) status(user int64, rid string, wait time.Duration) (status, answer) {
	path := "/api/v1/orders/" + rid
	if wait > 0 {
		path += "?wait=" + strconv.FormatInt(wait.Milliseconds(), 10) + "ms"
	}
	a := s.call(http.MethodGet, path, s.bearer(user), nil, nil)
	var st status
	if a.Code == http.StatusOK {
		_ = json.Unmarshal(a.Body, &st)
	}
	return st, a
}

// decided waits until the request leaves PENDING and returns its status
// (an error when it did not within the time given). Safe in goroutines.
func (s *system) decided(user int64, rid string, within time.Duration) (status, error) {
	deadline := time.Now().Add(within)
	for {
		st, a := s.status(user, rid, 5*time.Second)
		if a.Code == http.StatusOK && st.Status != "PENDING" {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("request %s of user %d still not decided after %v: %s %s", rid, user, within, a, a.Body)
		}
	}
}

func (s *system) pay(user int64, rid string) answer {
	return s.call(http.MethodPost, "/api/v1/orders/"+rid+"/pay", s.bearer(user), nil, nil)
}

// audit is the admin audit's answer, as the API's own type decodes it.
type audit = api.AuditReport

// settledAudit waits until the item has nothing pending and the audit holds
// with every check made (no transfer under way), and returns it.
func (s *system) settledAudit(item int64, within time.Duration) audit {
	s.t.Helper()
	var last audit
	var raw string
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		a := s.call(http.MethodGet, itemPath(item, "/audit"), s.admin, nil, nil)
		raw = fmt.Sprintf("%s %s", a, a.Body)
		if a.Code == http.StatusOK {
			last = audit{}
			_ = json.Unmarshal(a.Body, &last)
			if last.Pending == 0 && last.OK && len(last.Info) == 0 {
				return last
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("item %d: audit not settled and exact after %v: %s", item, within, raw)
		}
	}
}

// checkAudit asserts the audit's numbers against what the buyers were told.
func (s *system) checkAudit(item int64, buckets int, units, paid, unpaid, cancelled int64) audit {
	s.t.Helper()
	au := s.settledAudit(item, 15*time.Second)
	if au.Total != units || au.Paid != paid || au.Unpaid != unpaid || au.Cancelled != cancelled {
		s.t.Errorf("audit total %d paid %d unpaid %d cancelled %d; the buyers were told total %d paid %d unpaid %d cancelled %d",
			au.Total, au.Paid, au.Unpaid, au.Cancelled, units, paid, unpaid, cancelled)
	}
	left := units - paid - unpaid
	if au.DBStock != left || au.RedisStock != left {
		s.t.Errorf("audit stock MySQL %d Redis %d, want %d left", au.DBStock, au.RedisStock, left)
	}
	if buckets > 1 {
		if len(au.PerBucket) != buckets {
			s.t.Fatalf("audit has %d per_bucket entries, want %d", len(au.PerBucket), buckets)
		}
		var tot, p, u, c, db, rd int64
		for i, b := range au.PerBucket {
			if b.Bucket != i || b.DBStock != b.RedisStock || b.DBStock < 0 || b.Total != b.DBStock+b.Paid+b.Unpaid || b.Pending != 0 {
				s.t.Errorf("audit bucket %d not exact: %+v", i, b)
			}
			tot, p, u, c, db, rd = tot+b.Total, p+b.Paid, u+b.Unpaid, c+b.Cancelled, db+b.DBStock, rd+b.RedisStock
		}
		if tot != au.Total || p != au.Paid || u != au.Unpaid || c != au.Cancelled || db != au.DBStock || rd != au.RedisStock {
			s.t.Errorf("per_bucket sums total %d paid %d unpaid %d cancelled %d MySQL %d Redis %d differ from the item's %+v",
				tot, p, u, c, db, rd, au)
		}
	} else if len(au.PerBucket) != 0 {
		s.t.Errorf("unbucketed item's audit has per_bucket %v", au.PerBucket)
	}
	return au
}

// ordersInMySQL returns the item's live (UNPAID or PAID) order units and
// orders per user, the one look that is not over HTTP: the orders the
// buyers were told about must be exactly the rows.
func (s *system) ordersInMySQL(item int64) (units int64, perUser map[int64]int64) {
	s.t.Helper()
	rows, err := s.db.Query("SELECT user_id, qty FROM orders WHERE item_id = ? AND status IN ('UNPAID','PAID')", item)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	perUser = map[int64]int64{}
	for rows.Next() {
		var u, q int64
		if err := rows.Scan(&u, &q); err != nil {
			s.t.Fatal(err)
		}
		units += q
		perUser[u] += q
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
	return units, perUser
}
