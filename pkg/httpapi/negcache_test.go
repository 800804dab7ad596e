package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// countingServer is a second server on h's database, stock and topic whose
// MySQL pool counts the queries that contain match.
func (h *harness) countingServer(t *testing.T, match string) (*harness, *atomic.Int64) {
	t.Helper()
	db, n := testenv.CountingMySQL(t, h.db, match)
	srv, err := New(h.srv.cfg, Deps{DB: db, Stock: h.st, Publisher: h.writer, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, srv: srv, db: db, rdb: h.rdb, st: h.st, brokers: h.brokers, topic: h.topic, group: h.group,
		writer: h.writer, reg: h.reg, tokens: map[string]string{}}, n
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
	ttl := h.srv.items.TTL()
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
	clk.Step(ttl - time.Millisecond)
	burst(t, h, 50, path, nil, http.StatusNotFound)
	want("100 more GETs just before the period ends", 1)
	clk.Step(time.Millisecond)
	burst(t, h, 50, path, nil, http.StatusNotFound)
	want("100 more GETs in the next period", 2)
	// Created through another replica: hidden here for the rest of the
	// period, visible once it has passed.
	base.putItem(item, 10, 1)
	if r := h.do(http.MethodGet, path, "", nil); r.Code != http.StatusNotFound {
		t.Fatalf("item created within the period: %d %s, want 404 from the cache", r.Code, r.Body)
	}
	want("a GET within the period of the miss", 2)
	clk.Step(ttl)
	if r := h.do(http.MethodGet, path, "", nil); r.Code != http.StatusOK {
		t.Fatalf("item created through another replica: %d %s one period after, want 200", r.Code, r.Body)
	}
	want("the GET after the period", 3)
	// Known items are shared too.
	burst(t, h, 100, path, nil, http.StatusOK)
	want("200 GETs of a known item within its period", 3)
	clk.Step(ttl)
	burst(t, h, 100, path, nil, http.StatusOK)
	want("200 GETs of a known item in the next period", 4)
}
