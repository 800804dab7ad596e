package httpapi

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/auth"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/config/jwtconfig"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

const testSecret = "test-secret-0123456789abcdef"

// harness runs the real server in-process against the real stack: its own
// MySQL database, Kafka topic and random item ids in Redis.
type harness struct {
	t       testing.TB
	srv     *Server
	db      *sql.DB
	rdb     redis.UniversalClient
	st      *stock.Store
	brokers []string
	topic   string
	group   string
	writer  *kafka.Writer
	reg     *prometheus.Registry

	mu     sync.Mutex
	tokens map[string]string
}

type harnessOpts struct {
	ingress      func(*config.Ingress)
	transport    kafka.RoundTripper
	rdb          redis.UniversalClient
	storeTimeout time.Duration
	partitions   int
	// mysqlFaults, when set, makes every MySQL connection of the server go
	// through it, so a test can cut the arbiter.
	mysqlFaults *testenv.FaultDialer
}

func testIngress() config.Ingress {
	return config.Ingress{
		HTTPAddr: "127.0.0.1:0", JWT: jwtconfig.JWT{JWTSecret: testSecret}, PublishTimeout: 3 * time.Second,
		SoldOutTTL: 500 * time.Millisecond, IdempotencyTTL: time.Hour,
		Buckets:       config.Buckets{Max: 64, Wait: time.Second, Poll: 25 * time.Millisecond},
		StatusRecheck: 750 * time.Millisecond, // the flag's default
	}
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	db, dsn := testenv.MySQL(t)
	if o.mysqlFaults != nil {
		db = testenv.FaultyMySQL(t, dsn, o.mysqlFaults)
	}
	rdb := o.rdb
	if rdb == nil {
		rdb = testenv.Redis(t)
	}
	if o.partitions == 0 {
		o.partitions = 3
	}
	if o.storeTimeout == 0 {
		o.storeTimeout = 2 * time.Second
	}
	brokers := testenv.Kafka(t)
	topic, dlq, group := testenv.Topics(t, o.partitions)
	in := testIngress()
	if o.ingress != nil {
		o.ingress(&in)
	}
	var w *kafka.Writer
	if o.transport != nil {
		w = orderlog.NewWriterWithTransport(brokers, topic, in.PublishTimeout, o.transport)
	} else {
		w = orderlog.NewWriter(brokers, topic, in.PublishTimeout)
	}
	t.Cleanup(func() { _ = w.Close() })
	reg := prometheus.NewRegistry()
	// The hot path shares Redis round trips as the ingress does by default.
	b := in.RedisBatch
	if b.Flushers == 0 {
		b = config.RedisBatching{MaxBatch: 128, Flushers: 4}
	}
	st := stock.New(rdb)
	if b.MaxBatch > 0 {
		co := stock.NewCoalescer(rdb, stock.CoalesceConfig{MaxBatch: b.MaxBatch, Window: b.Window, Flushers: b.Flushers})
		t.Cleanup(co.Close)
		st = st.WithCoalescer(co)
	}
	log := testenv.LogTail(t) // printed when the test fails
	srv, err := New(Config{Ingress: in, StoreTimeout: o.storeTimeout, Brokers: brokers, Topic: topic, DLQTopic: dlq, Group: group},
		Deps{DB: db, Stock: st, Publisher: w, Registry: reg, Log: log, OpenAPI: []byte("openapi: 3.0.3\n")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeServer(t, srv) })
	return &harness{t: t, srv: srv, db: db, rdb: rdb, st: st, brokers: brokers, topic: topic, group: group,
		writer: w, reg: reg, tokens: map[string]string{}}
}

// closeServer stops srv's tally flusher (after its last flush).
func closeServer(t testing.TB, srv *Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Close(ctx) // Redis may be down on purpose: the counts are the test's to check, not this
}

// token returns a bearer token of user (role "" or "admin").
func (h *harness) token(user int64, role string) string {
	k := strconv.FormatInt(user, 10) + "/" + role
	h.mu.Lock()
	defer h.mu.Unlock()
	if tok, ok := h.tokens[k]; ok {
		return tok
	}
	tok, err := auth.Sign(testSecret, user, role, time.Hour)
	if err != nil {
		h.t.Fatal(err)
	}
	h.tokens[k] = tok
	return tok
}

type resp struct {
	Code   int
	Header http.Header
	Body   []byte
}

func (r resp) json(t testing.TB) map[string]any {
	t.Helper()
	return decode[map[string]any](t, r)
}

// decode returns r's body read as a T (an answer of pkg/api, a map), and
// fails the test when it is not one.
func decode[T any](t testing.TB, r resp) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("answer %d %q is not a %T: %v", r.Code, r.Body, v, err)
	}
	return v
}

// do serves one request in-process. hdr may set "Authorization" etc.
func (h *harness) do(method, path, body string, hdr map[string]string) resp {
	req := httptest.NewRequest(method, path, bytes.NewBufferString(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.srv.Echo().ServeHTTP(rec, req)
	return resp{Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

func (h *harness) as(user int64) map[string]string {
	return map[string]string{"Authorization": "Bearer " + h.token(user, "")}
}

func (h *harness) admin() map[string]string {
	return map[string]string{"Authorization": "Bearer " + h.token(1, "admin")}
}

// putItem creates an item on sale now through the admin API.
func (h *harness) putItem(id, stockQty int64, limit int) { h.putBucketedItem(id, stockQty, limit, 1) }

// newItem puts a new item (a new id) of stockQty units on sale now, limit
// a buyer, and returns its id.
func (h *harness) newItem(stockQty int64, limit int) int64 {
	h.t.Helper()
	id := testenv.ItemID()
	h.putItem(id, stockQty, limit)
	return id
}

// putBucketedItem creates an item of buckets stock buckets on sale now.
func (h *harness) putBucketedItem(id, stockQty int64, limit, buckets int) {
	h.t.Helper()
	body := fmt.Sprintf(`{"name":"item %d","price_cents":999,"stock":%d,"per_user_limit":%d,"starts_at":%q,"ends_at":%q,"buckets":%d}`,
		id, stockQty, limit, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339), buckets)
	r := h.do(http.MethodPut, fmt.Sprintf("/api/v1/admin/items/%d", id), body, h.admin())
	if r.Code != http.StatusOK {
		h.t.Fatalf("put item: %d %s", r.Code, r.Body)
	}
}

func (h *harness) order(user, item int64, qty int, idemKey string) resp {
	hdr := h.as(user)
	if idemKey != "" {
		hdr["Idempotency-Key"] = idemKey
	}
	return h.do(http.MethodPost, "/api/v1/orders", fmt.Sprintf(`{"item_id":%d,"qty":%d}`, item, qty), hdr)
}

func (h *harness) redisStock(item int64) int64 {
	h.t.Helper()
	n, ok, err := h.st.Stock(context.Background(), item)
	if err != nil || !ok {
		h.t.Fatalf("redis stock of %d: %v (warmed %v)", item, err, ok)
	}
	return n
}

// readTopic returns every message of the harness's topic.
func (h *harness) readTopic() []orderlog.OrderMessage {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := &kafka.Client{Addr: kafka.TCP(h.brokers...)}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{h.topic}})
	if err != nil || len(meta.Topics) != 1 {
		h.t.Fatalf("metadata: %v", err)
	}
	var out []orderlog.OrderMessage
	for _, p := range meta.Topics[0].Partitions {
		// A partition of a topic created moments ago on a fresh broker may
		// have no leader yet: its offsets come back with an error (and
		// meaningless numbers) until it has one.
		var po kafka.PartitionOffsets
		testenv.Eventually(h.t, 20*time.Second, 100*time.Millisecond, func() bool {
			offs, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
				h.topic: {kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID)}}})
			if err != nil || len(offs.Topics[h.topic]) != 1 {
				return false
			}
			po = offs.Topics[h.topic][0]
			return po.Error == nil && po.FirstOffset >= 0
		}, "offsets of %s partition %d", h.topic, p.ID)
		if po.LastOffset <= po.FirstOffset {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: h.brokers, Topic: h.topic, Partition: p.ID, MaxWait: 100 * time.Millisecond})
		if err := r.SetOffset(po.FirstOffset); err != nil {
			h.t.Fatal(err)
		}
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				h.t.Fatalf("read partition %d: %v", p.ID, err)
			}
			om, err := orderlog.Decode(m.Value)
			if err != nil {
				h.t.Fatalf("decode: %v", err)
			}
			out = append(out, om)
			if m.Offset >= po.LastOffset-1 {
				break
			}
		}
		r.Close()
	}
	return out
}
