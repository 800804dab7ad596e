package orderwriter_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// env is one test's isolated world: its database, topics, group and item.
type env struct {
	t       testing.TB
	db      *sql.DB
	dsn     string
	st      *stock.Store
	brokers []string
	topic   string
	dlq     string
	group   string
	item    int64
	total   int64
	// buckets is the item's stock bucket count (admit runs each user in
	// their home bucket).
	buckets int
}

func newEnv(t testing.TB, partitions int, mysqlStock, redisStock int64) *env {
	t.Helper()
	db, dsn := testenv.MySQL(t)
	e := &env{t: t, db: db, dsn: dsn, st: stock.New(testenv.Redis(t)), brokers: testenv.Kafka(t), item: testenv.ItemID(), total: mysqlStock}
	e.topic, e.dlq, e.group = testenv.Topics(t, partitions)
	e.createItem(e.item, mysqlStock)
	ctx := context.Background()
	now := time.Now()
	err := e.st.Warm(ctx, stock.Snapshot{ItemID: e.item, Stock: redisStock, StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) createItem(id, stk int64) {
	e.t.Helper()
	_, err := e.db.Exec(`INSERT INTO items (id, name, price_cents, total_stock, stock, per_user_limit, starts_at, ends_at)
		VALUES (?, 'test', 999, ?, ?, 1, NOW(3) - INTERVAL 1 HOUR, NOW(3) + INTERVAL 1 HOUR)`, id, stk, stk)
	if err != nil {
		e.t.Fatal(err)
	}
}

// admit reserves one unit for each user through the real admission script,
// as the ingress does, and returns the messages it would publish.
func (e *env) admit(users []int64) []orderlog.OrderMessage {
	e.t.Helper()
	out := make([]orderlog.OrderMessage, len(users))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errs := make(chan error, len(users))
	for i, u := range users {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			now := time.Now()
			n := max(e.buckets, 1)
			b := stock.HomeBucket(u, n)
			rid := reqid.NewIn(e.item, b, now)
			res, err := e.st.Admit(context.Background(), stock.AdmitRequest{ItemID: e.item, Buckets: n, Bucket: b, UserID: u, Qty: 1, RequestID: rid, Now: now})
			if err == nil && res.Code != stock.Admitted {
				err = &admitErr{res.Code}
			}
			if err != nil {
				errs <- err
				return
			}
			out[i] = orderlog.OrderMessage{V: orderlog.MessageVersion, RequestID: rid, ItemID: e.item, UserID: u, Qty: 1, ReservedMs: now.UnixMilli()}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatalf("admit: %v", err)
	}
	return out
}

type admitErr struct{ code stock.AdmitCode }

func (a *admitErr) Error() string { return "admit: " + string(a.code) }

func users(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

// produce publishes raw values to the orders topic, spread round-robin over
// its partitions (so several replicas write the same item concurrently, the
// hardest case for the arbiter), or all to partition 0 when onePartition.
func (e *env) produce(values [][]byte, onePartition bool) {
	e.t.Helper()
	var bal kafka.Balancer = &kafka.RoundRobin{}
	if onePartition {
		bal = kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })
	}
	w := &kafka.Writer{Addr: kafka.TCP(e.brokers...), Topic: e.topic, Balancer: bal, RequiredAcks: kafka.RequireAll,
		BatchSize: 1000, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	msgs := make([]kafka.Message, len(values))
	for i, v := range values {
		msgs[i] = kafka.Message{Key: []byte("k"), Value: v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(msgs) > 0 {
		n := min(len(msgs), 1000)
		if err := w.WriteMessages(ctx, msgs[:n]...); err != nil {
			e.t.Fatalf("produce: %v", err)
		}
		msgs = msgs[n:]
	}
}

func encode(t testing.TB, ms []orderlog.OrderMessage) [][]byte {
	out := make([][]byte, len(ms))
	for i, m := range ms {
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

func (e *env) config() orderwriter.Config {
	return orderwriter.Config{
		Brokers: e.brokers, Topic: e.topic, DLQTopic: e.dlq, GroupID: e.group,
		BatchSize: 100, BatchWait: 20 * time.Millisecond,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond, GiveUpAfter: 500 * time.Millisecond,
		PaymentWindow: 15 * time.Minute, StoreTimeout: 2 * time.Second, DrainTimeout: 10 * time.Second,
		HeartbeatInterval: 300 * time.Millisecond, SessionTimeout: 6 * time.Second, RebalanceTimeout: 6 * time.Second,
	}
}

// running is a consumer started in-process; stop shuts it down gracefully
// and waits for it.
type running struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error
}

func (r *running) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("consumer run: %v", r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consumer did not stop within 30s")
	}
}

func (e *env) start(cfg orderwriter.Config, db *sql.DB, m *orderwriter.Metrics) *running {
	e.t.Helper()
	if m == nil {
		m = orderwriter.NewMetrics(prometheus.NewRegistry())
	}
	if db == nil {
		db = e.db
	}
	c, err := orderwriter.New(cfg, orderwriter.Deps{DB: db, Stock: e.st}, m, logger())
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = c.Run(ctx)
		close(r.done)
	}()
	e.t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

func logger() *slog.Logger {
	if os.Getenv("FLASHSALE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (e *env) count(q string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.QueryRow(q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func (e *env) decided() int64 { return e.count("SELECT COUNT(*) FROM request_outcomes") }

func (e *env) waitDecided(n int64, timeout time.Duration) {
	e.t.Helper()
	testenv.Eventually(e.t, timeout, 50*time.Millisecond, func() bool { return e.decided() >= n },
		"decided %d of %d", func() int64 { return e.decided() }(), n)
}

// waitDrained waits until the group has committed every message.
func (e *env) waitDrained(timeout time.Duration) {
	e.t.Helper()
	testenv.WaitDrained(e.t, timeout, e.brokers, e.group, e.topic, "the group did not commit everything")
}

// runUntilDrained runs a consumer with cfg (and metrics m, if not nil)
// until the group has committed every message (within a minute), then
// stops it.
func (e *env) runUntilDrained(cfg orderwriter.Config, m *orderwriter.Metrics) {
	e.t.Helper()
	r := e.start(cfg, nil, m)
	e.waitDrained(60 * time.Second)
	r.stop(e.t)
}

// checkInvariants checks I1-I3 and I7 for the item at quiescence, in MySQL and
// in Redis, and that the status cache holds every decided request.
func (e *env) checkInvariants() {
	e.t.Helper()
	ctx := context.Background()
	it, err := store.GetItem(ctx, e.db, e.item)
	if err != nil {
		e.t.Fatal(err)
	}
	active := e.count("SELECT COALESCE(SUM(qty),0) FROM orders WHERE item_id = ? AND status IN ('UNPAID','PAID')", e.item)
	if active > it.TotalStock {
		e.t.Errorf("I1: active qty %d > total %d", active, it.TotalStock)
	}
	if dup := e.count("SELECT COUNT(*) FROM (SELECT user_id FROM orders WHERE item_id = ? GROUP BY user_id HAVING COUNT(*) > 1) d", e.item); dup != 0 {
		e.t.Errorf("I2: %d users with several orders", dup)
	}
	if it.Stock+active != it.TotalStock {
		e.t.Errorf("I3 MySQL: stock %d + active %d != total %d", it.Stock, active, it.TotalStock)
	}
	rs, err := e.st.ReadState(ctx, e.item)
	if err != nil {
		e.t.Fatal(err)
	}
	if rs.Stock+rs.PendingQty+active != it.TotalStock {
		e.t.Errorf("I3 Redis: stock %d + pending %d + active %d != total %d", rs.Stock, rs.PendingQty, active, it.TotalStock)
	}
	if it.Stock < 0 || rs.Stock < 0 {
		e.t.Errorf("I7: MySQL stock %d, Redis stock %d", it.Stock, rs.Stock)
	}
	if o, d := e.count("SELECT COUNT(*) FROM orders WHERE item_id = ?", e.item),
		e.count("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ? AND outcome = 'ORDERED'", e.item); o != d {
		e.t.Errorf("orders %d != ORDERED outcomes %d", o, d)
	}
}
