package rebalance

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"pgregory.net/rapid"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/admission"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// modelCases is how many items TestModelAdmissionAndRebalance sells: each
// is a few hundred store calls and a few dozen MySQL commits, 0.1 s alone
// on 2 cores, 0.2-0.4 s with -race: 50 take 5 s alone, 10-20 s with -race
// beside other work. -rapid.checks overrides it.
const modelCases = 50

// TestModelAdmissionAndRebalance runs the whole admission and rebalance
// loop against an in-memory model of the item: the units left, and the
// buyers waiting. The code is the real one on the real stores: the
// ingress's admission.Service (Redis), and Rebalancers passing over MySQL
// and Redis; only Kafka is an in-process publisher that acknowledges at
// once (the order path after the publish is not the subject) and no
// consumer runs (MySQL keeps the reserved units on the buckets' rows, so
// both stores can be compared unit for unit).
//
// rapid draws an item (2 to 8 buckets, 1 to 30 units, per-user limit 3)
// and a run of steps: a new buyer (home and qty 1 to 3), the waiting
// buyers retrying, or a rebalancer pass, which may crash its mover right
// after a transfer's Redis take ("out") or its MySQL move ("moved"): the
// crashed mover is gone (runtime.Goexit ends it mid-transfer) and a new
// one takes over, as a new reaper replica would. On every answer:
//
//   - 202 only while the model has the qty; then the model has qty less;
//   - 410 (from Redis or memory) only when the model has less than the
//     qty: never a wrong 410;
//   - 503 stock_moving only while the model could serve the buyer or a
//     transfer is open.
//
// Then the sale is driven to its end (passes, and every waiting buyer and
// new buyers of 1 retrying): it must end, within 60 rounds, with exactly
// the item's units sold (never stuck), every bucket empty in Redis, MySQL
// holding per bucket what Redis reserved, and no transfer open.
func TestModelAdmissionAndRebalance(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == f.DefValue {
		// The flag is rapid's only count; this test is not parallel, so
		// the package's parallel properties run after it is put back.
		_ = f.Value.Set(strconv.Itoa(modelCases))
		defer func() { _ = f.Value.Set(f.DefValue) }()
	}
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	svc := admission.New(admission.Config{SoldOutTTL: time.Minute, PublishTimeout: 5 * time.Second,
		IdempotencyTTL: time.Minute, StoreTimeout: 5 * time.Second, BucketWait: 2 * time.Millisecond,
		BucketPoll: time.Millisecond}, admission.Deps{Stock: e.st, DB: e.db, Publisher: ackAll{}}, admission.NewMetrics(reg), quiet())
	defer func() { crashAfter = nil }()
	cases, sold, crashes := 0, int64(0), 0
	start := time.Now()
	rapid.Check(t, func(t *rapid.T) {
		cases++
		m := newModel(t, e, svc)
		defer m.close()
		for step := range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("step%d", step)) {
			case 0, 1:
				m.arrive(rapid.IntRange(0, m.n-1).Draw(t, fmt.Sprintf("home%d", step)),
					rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("qty%d", step)))
			case 2:
				m.retry()
			default:
				crash := rapid.SampledFrom([]string{"", "", "out", "moved"}).Draw(t, fmt.Sprintf("crash%d", step))
				m.pass(crash, rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("crashAt%d", step)))
			}
		}
		m.drain()
		sold, crashes = sold+m.total, crashes+m.crashes
	})
	t.Logf("%d cases, %d units sold, %d movers crashed mid-transfer, %v transfers resumed, in %v", cases, sold, crashes,
		e.metric("flashsale_bucket_transfers_total", "result", "resumed"), time.Since(start).Round(time.Millisecond))
}

// model is one item: the real stores under test and what they must agree
// with.
type model struct {
	t     *rapid.T
	e     *env
	svc   *admission.Service
	r     *Rebalancer
	item  int64
	n     int
	total int64 // units the item started with
	left  int64 // units not sold
	users int64
	wait  []buyer // answered 503 stock_moving, retrying
	// crashes counts the movers that died mid-transfer.
	crashes int
}

type buyer struct {
	user int64
	home int
	qty  int
}

func newModel(t *rapid.T, e *env, svc *admission.Service) *model {
	n := rapid.IntRange(2, 8).Draw(t, "buckets")
	total := rapid.Int64Range(1, 30).Draw(t, "units")
	m := &model{t: t, e: e, svc: svc, n: n, total: total, left: total, users: testenv.ItemID()}
	m.item = m.create()
	m.r = m.mover()
	return m
}

// create makes the item in MySQL, its sale open and a limit of 3, and
// warms it.
func (m *model) create() int64 {
	ctx := context.Background()
	id := testenv.ItemID()
	now := time.Now()
	_, err := catalog.New(m.e.db, m.e.st, testenv.NoLag).Put(ctx, store.Item{ID: id, Name: "model", PriceCents: 100, TotalStock: m.total,
		PerUserLimit: 3, StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: m.n})
	if err != nil {
		m.t.Fatalf("create item %d: %v", id, err)
	}
	return id
}

// close ends the item's sale window, so later cases' passes skip it.
func (m *model) close() {
	_, err := m.e.db.ExecContext(context.Background(),
		"UPDATE items SET starts_at = ?, ends_at = ? WHERE id = ?", time.Now().Add(-3*time.Hour).UTC(), time.Now().Add(-2*time.Hour).UTC(), m.item)
	if err != nil {
		m.t.Fatalf("close item: %v", err)
	}
}

// mover is a new rebalancer (a new reaper process: no memory of passes).
func (m *model) mover() *Rebalancer {
	return m.e.rebalancer(Config{Interval: time.Hour})
}

// arrive is a new buyer's first try.
func (m *model) arrive(home, qty int) {
	m.users = testenv.UserIn(home, m.n, m.users+1)
	m.try(buyer{user: m.users, home: home, qty: qty})
}

// retry lets every waiting buyer try again.
func (m *model) retry() {
	waiting := m.wait
	m.wait = nil
	for _, b := range waiting {
		m.try(b)
	}
}

// try admits b and checks the answer against the model.
func (m *model) try(b buyer) {
	ctx := context.Background()
	res := m.svc.Admit(ctx, admission.Request{ItemID: m.item, UserID: b.user, Qty: b.qty})
	switch res.Outcome {
	case admission.Accepted:
		if m.left < int64(b.qty) {
			m.t.Fatalf("202 to a buyer of %d with %d units left", b.qty, m.left)
		}
		m.left -= int64(b.qty)
	case admission.SoldOut, admission.SoldOutMem:
		if m.left >= int64(b.qty) {
			m.t.Fatalf("%s to a buyer of %d (home %d) with %d units left: Redis %v", res.Outcome, b.qty, b.home, m.left, m.redis())
		}
	case admission.StockMoving:
		if m.left < int64(b.qty) && m.open() == 0 {
			m.t.Fatalf("503 stock_moving to a buyer of %d with %d units left and no transfer open: Redis %v", b.qty, m.left, m.redis())
		}
		m.wait = append(m.wait, b)
	default:
		m.t.Fatalf("buyer of %d on bucket %d: unexpected %+v", b.qty, b.home, res)
	}
}

// pass runs one rebalancer pass. With crash set, the mover dies right
// after that step of the pass's crashAt-th transfer (if it makes that
// many), and a new mover replaces it.
func (m *model) pass(crash string, crashAt int) {
	// A pass drives an item's transfers concurrently (moveAll): the
	// crash ends the goroutine of the one that reaches it, mid-transfer.
	var seen atomic.Int32
	var crashed atomic.Bool
	if crash != "" {
		crashAfter = func(step string) {
			if step == crash && int(seen.Add(1)) > crashAt {
				crashed.Store(true)
				runtime.Goexit() // the mover dies here: nothing after this step runs
			}
		}
	}
	done := make(chan error, 1)
	go func() {
		err := fmt.Errorf("the mover crashed")
		defer func() { done <- err }()
		err = m.r.Pass(context.Background())
	}()
	err := <-done
	crashAfter = nil
	if crashed.Load() {
		m.crashes++
		m.r = m.mover()
		return
	}
	if err != nil {
		m.t.Fatalf("pass: %v", err)
	}
}

// drain drives the sale to its end and checks both stores.
func (m *model) drain() {
	for round := 0; ; round++ {
		if round == 60 {
			m.t.Fatalf("stuck: %d of %d units left after 60 rounds, %d buyers waiting %v, Redis %v, open transfers %d",
				m.left, m.total, len(m.wait), m.wait, m.redis(), m.open())
		}
		m.pass("", 0)
		m.retry()
		if len(m.wait) == 0 {
			before := m.left
			m.arrive(round%m.n, 1)
			if before == 0 && m.left == 0 && len(m.wait) == 0 {
				break // a buyer of 1 was told sold out, with nothing left
			}
		}
	}
	m.pass("", 0) // a last pass has nothing to move
	ctx := context.Background()
	redisStock := m.redis()
	rows, err := store.BucketRows(ctx, m.e.db, m.item, false)
	if err != nil {
		m.t.Fatal(err)
	}
	var reserved int64
	for b := range m.n {
		held := m.reserved(b)
		reserved += held
		if redisStock[b] != 0 {
			m.t.Fatalf("bucket %d ends with %d units in Redis", b, redisStock[b])
		}
		if rows[b].Stock != held || rows[b].TotalStock != held {
			m.t.Fatalf("bucket %d: MySQL stock %d, total %d; Redis reserved %d there", b, rows[b].Stock, rows[b].TotalStock, held)
		}
	}
	if reserved != m.total {
		m.t.Fatalf("%d units reserved; the item had %d", reserved, m.total)
	}
	if open := m.open(); open != 0 || m.e.rdb.SCard(ctx, stock.KeysOf(m.item).TransfersLive()).Val() != 0 {
		m.t.Fatalf("%d transfers open at the end", open)
	}
}

func (m *model) redis() []int64 {
	s, err := m.e.st.BucketStocks(context.Background(), m.item, m.n)
	if err != nil {
		m.t.Fatal(err)
	}
	return s
}

// reserved is the units Redis holds reserved in bucket b.
func (m *model) reserved(b int) int64 {
	var sum int64
	for _, v := range m.e.rdb.HVals(context.Background(), stock.BucketKeys(m.item, b).Reservations).Val() {
		parts := strings.Split(v, ":") // user:qty:reserved_ms
		if len(parts) != 3 {
			m.t.Fatalf("reservation %q", v)
		}
		q, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			m.t.Fatalf("reservation %q: %v", v, err)
		}
		sum += q
	}
	return sum
}

// open is the item's transfers not yet final in MySQL.
func (m *model) open() int {
	var n int
	err := m.e.db.QueryRowContext(context.Background(),
		"SELECT COUNT(*) FROM stock_transfers WHERE item_id = ? AND state IN ('PLANNED','MOVED')", m.item).Scan(&n)
	if err != nil {
		m.t.Fatal(err)
	}
	return n
}

// ackAll is a Kafka that acknowledges every message at once.
type ackAll struct{}

func (ackAll) WriteMessages(context.Context, ...kafka.Message) error { return nil }
