package httpapi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// countingServer is a second server on h's database, stock and topic whose
// MySQL pool counts the queries that contain match.
func (h *harness) countingServer(t *testing.T, match string) (*harness, *atomic.Int64) {
	t.Helper()
	var name string
	if err := h.db.QueryRow("SELECT DATABASE()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	common := testenv.Common(t)
	cfg, err := mysql.ParseDSN(common.DSN())
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = name
	cfg.InterpolateParams = true // every query is one QueryContext, never prepare+execute
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := new(atomic.Int64)
	db := sql.OpenDB(countingConnector{Connector: conn, match: match, n: n})
	t.Cleanup(func() { _ = db.Close() })
	srv, err := New(h.srv.cfg, Deps{DB: db, Stock: h.st, Publisher: h.writer, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, db: db, rdb: h.rdb, st: h.st, brokers: h.brokers, topic: h.topic, group: h.group,
		writer: h.writer, reg: h.reg, tokens: map[string]string{}}, n
}

type countingConnector struct {
	driver.Connector
	match string
	n     *atomic.Int64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: c}, nil
}

// countingConn counts queries and forwards everything else to the MySQL
// driver's connection (which implements all of these).
type countingConn struct {
	driver.Conn
	c countingConnector
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if strings.Contains(q, c.c.match) {
		c.c.n.Add(1)
	}
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if strings.Contains(q, c.c.match) {
		c.c.n.Add(1)
	}
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *countingConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, o)
}

func (c *countingConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

func (c *countingConn) CheckNamedValue(v *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(v)
}

// burst sends n concurrent then n sequential GETs of path and checks each
// answer is want.
func burst(t *testing.T, h *harness, n int, path string, hdr map[string]string, want int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := h.do(http.MethodGet, path, "", hdr); r.Code != want {
				t.Errorf("GET %s: %d %s, want %d", path, r.Code, r.Body, want)
			}
		}()
	}
	wg.Wait()
	for range n {
		if r := h.do(http.MethodGet, path, "", hdr); r.Code != want {
			t.Fatalf("GET %s: %d %s, want %d", path, r.Code, r.Body, want)
		}
	}
}

// TestUnknownItemCostsOneQueryPerTTL: GET /api/v1/items/{id} is public; a
// client hammering an id MySQL does not have must cost MySQL one query per
// cache period, not one per request, and the item shows up once a period
// has passed after it is created. The caches' clock is the test's: each
// period is passed by advancing it, so the counts are exact however slow
// the machine.
func TestUnknownItemCostsOneQueryPerTTL(t *testing.T) {
	base := newHarness(t, harnessOpts{partitions: 1})
	h, queries := base.countingServer(t, "FROM items")
	clk := newTestClock()
	h.useCacheClock(clk)
	ttl := h.srv.items.ttl
	item := testenv.ItemID()
	path := fmt.Sprintf("/api/v1/items/%d", item)
	want := func(what string, n int64) {
		t.Helper()
		if got := queries.Load(); got != n {
			t.Fatalf("%s: %d item queries in all, want %d", what, got, n)
		}
	}
	burst(t, h, 100, path, nil, http.StatusNotFound)
	want("200 GETs of an unknown item within one period", 1)
	clk.advance(ttl - time.Millisecond)
	burst(t, h, 50, path, nil, http.StatusNotFound)
	want("100 more GETs just before the period ends", 1)
	clk.advance(time.Millisecond)
	burst(t, h, 50, path, nil, http.StatusNotFound)
	want("100 more GETs in the next period", 2)
	// Created through another replica: hidden here for the rest of the
	// period, visible once it has passed.
	base.putItem(item, 10, 1)
	if r := h.do(http.MethodGet, path, "", nil); r.Code != http.StatusNotFound {
		t.Fatalf("item created within the period: %d %s, want 404 from the cache", r.Code, r.Body)
	}
	want("a GET within the period of the miss", 2)
	clk.advance(ttl)
	if r := h.do(http.MethodGet, path, "", nil); r.Code != http.StatusOK {
		t.Fatalf("item created through another replica: %d %s one period after, want 200", r.Code, r.Body)
	}
	want("the GET after the period", 3)
	// Known items are shared too.
	burst(t, h, 100, path, nil, http.StatusOK)
	want("200 GETs of a known item within its period", 3)
	clk.advance(ttl)
	burst(t, h, 100, path, nil, http.StatusOK)
	want("200 GETs of a known item in the next period", 4)
}

// TestUnknownRequestCostsOneQueryPerTTL: polling a well-formed request id
// that neither Redis nor MySQL knows costs MySQL one query per TTL; a
// decision MySQL makes later is visible once the TTL has passed, and a
// status Redis has wins at once over the remembered "unknown". The request
// cache's clock is the test's, advanced past the TTL, so counts are exact.
func TestUnknownRequestCostsOneQueryPerTTL(t *testing.T) {
	base := newHarness(t, harnessOpts{partitions: 1})
	h, queries := base.countingServer(t, "FROM request_outcomes")
	clk := newTestClock()
	h.useCacheClock(clk)
	want := func(what string, n int64) {
		t.Helper()
		if got := queries.Load(); got != n {
			t.Fatalf("%s: %d MySQL queries in all, want %d", what, got, n)
		}
	}
	const user = 77
	item := testenv.ItemID()
	rid := reqid.New(item, time.Now())
	path := "/api/v1/orders/" + rid
	burst(t, h, 100, path, h.as(user), http.StatusNotFound)
	want("200 polls of an unknown request within one TTL", 1)
	clk.advance(unknownRequestTTL - time.Millisecond)
	burst(t, h, 50, path, h.as(user), http.StatusNotFound)
	want("100 more polls just before the TTL ends", 1)
	clk.advance(time.Millisecond)
	burst(t, h, 50, path, h.as(user), http.StatusNotFound)
	want("100 more polls in the next TTL", 2)
	// MySQL decides it now (say the ingress recorded ABORTED): the poll must
	// see it once the TTL has passed.
	if _, _, err := store.Decide(context.Background(), base.db, store.Decision{RequestID: rid, ItemID: item, UserID: user, Qty: 1,
		Outcome: store.Aborted, Reason: store.ReasonPublishFailed}); err != nil {
		t.Fatal(err)
	}
	clk.advance(unknownRequestTTL)
	r := h.do(http.MethodGet, path, "", h.as(user))
	if r.Code != http.StatusOK {
		t.Fatalf("request MySQL decided: %d %s one TTL after, want 200", r.Code, r.Body)
	}
	if st := r.json(t)["status"]; st != orderstatus.Rejected {
		t.Fatalf("decided request: status %v, want %s", st, orderstatus.Rejected)
	}
	want("the poll after the TTL", 3)

	// A status in Redis beats a remembered "unknown" at once.
	rid2 := reqid.New(item, time.Now())
	burst(t, h, 10, "/api/v1/orders/"+rid2, h.as(user), http.StatusNotFound)
	want("20 polls of a second unknown request", 4)
	if err := orderstatus.Put(context.Background(), base.st, orderstatus.View{RequestID: rid2, ItemID: item, Qty: 1,
		Status: orderstatus.Rejected, Reason: store.ReasonSoldOut, UserID: user}); err != nil {
		t.Fatal(err)
	}
	if r := h.do(http.MethodGet, "/api/v1/orders/"+rid2, "", h.as(user)); r.Code != http.StatusOK {
		t.Fatalf("request with a cached status: %d %s, want 200 at once", r.Code, r.Body)
	}
}

// TestNegCacheBounded: random ids (an attacker's) never grow the cache past
// its bound, entries expire after the TTL, and forget drops one at once.
func TestNegCacheBounded(t *testing.T) {
	c := newNegCache[int](time.Second, 100)
	now := time.Now()
	for i := range 10000 {
		c.add(i, now.Add(time.Duration(i)*time.Microsecond))
		if n := c.len(); n > 100 || len(c.fifo) > 100 {
			t.Fatalf("after %d adds: %d keys, %d queued, want at most 100", i+1, n, len(c.fifo))
		}
	}
	later := now.Add(10 * time.Millisecond)
	if !c.has(9999, later) || c.has(0, later) {
		t.Fatalf("want the newest kept and the oldest evicted")
	}
	if c.has(9999, later.Add(time.Second)) {
		t.Fatalf("entry still there after its TTL")
	}
	c.forget(9999)
	if c.has(9999, later) {
		t.Fatalf("forgotten entry still there")
	}
	c.add(5, later)
	c.add(5, later.Add(500*time.Millisecond)) // re-added: the newer expiry holds
	if !c.has(5, later.Add(1200*time.Millisecond)) {
		t.Fatalf("re-added entry expired with its first expiry")
	}
}
