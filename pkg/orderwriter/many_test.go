package orderwriter_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// manyEnv is an env with several items, each warmed in Redis.
type manyEnv struct {
	*env
	items []int64
}

// newManyEnv makes len(mysql) items, item i with mysql[i] units in MySQL
// and redis[i] in Redis.
func newManyEnv(t *testing.T, partitions int, mysql, redis []int64) *manyEnv {
	t.Helper()
	e := newEnv(t, partitions, mysql[0], redis[0])
	m := &manyEnv{env: e, items: []int64{e.item}}
	now := time.Now()
	for i := 1; i < len(mysql); i++ {
		id := testenv.ItemID()
		e.createItem(id, mysql[i])
		err := e.st.Warm(context.Background(), stock.Snapshot{ItemID: id, Stock: redis[i], StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour), PerUserLimit: 1})
		if err != nil {
			t.Fatal(err)
		}
		m.items = append(m.items, id)
	}
	return m
}

// of is the env seen for item (admit and checkInvariants act on e.item).
func (m *manyEnv) of(item int64) *env {
	e := *m.env
	e.item = item
	return &e
}

// admitAll admits users for every item and returns the messages grouped by
// item (groups[i] are items[i]'s, in admission order).
func (m *manyEnv) admitAll(us []int64) [][]orderlog.OrderMessage {
	groups := make([][]orderlog.OrderMessage, len(m.items))
	for i, id := range m.items {
		groups[i] = m.of(id).admit(us)
	}
	return groups
}

// awaitRows returns once no other transaction holds a stock row of m's
// items: it locks them all, waiting on the holder's commit as a locking
// read does, and lets go at once.
func (m *manyEnv) awaitRows(ctx context.Context) error {
	tx, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // only the wait mattered
	args := make([]any, len(m.items))
	for i, id := range m.items {
		args[i] = id
	}
	rows, err := tx.QueryContext(ctx, "SELECT id FROM items WHERE id IN (?"+strings.Repeat(",?", len(args)-1)+") ORDER BY id FOR UPDATE", args...)
	if err != nil {
		return err
	}
	return rows.Close()
}

func flat(groups [][]orderlog.OrderMessage) []orderlog.OrderMessage {
	var out []orderlog.OrderMessage
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func (m *manyEnv) writer() *orderwriter.BatchWriter {
	return &orderwriter.BatchWriter{DB: m.db, PaymentWindow: 15 * time.Minute, TxTimeout: 10 * time.Second}
}

// checkMySQL checks, for item, want orders (one per ordered request, each
// buyer once) and that its stock plus its live orders is its total.
func (m *manyEnv) checkMySQL(item int64, want int64) {
	m.t.Helper()
	it, err := store.GetItem(context.Background(), m.db, item)
	if err != nil {
		m.t.Fatal(err)
	}
	o := m.count("SELECT COUNT(*) FROM orders WHERE item_id = ?", item)
	if o != want {
		m.t.Errorf("item %d: %d orders, want %d", item, o, want)
	}
	if d := m.count("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ? AND outcome = 'ORDERED'", item); d != o {
		m.t.Errorf("item %d: %d ORDERED decisions for %d orders", item, d, o)
	}
	if it.Stock+o != it.TotalStock || it.Stock < 0 {
		m.t.Errorf("item %d: stock %d + orders %d != total %d", item, it.Stock, o, it.TotalStock)
	}
}

// Eight writers decide the same 30-item batch at once, each retrying until
// it commits: every request is decided exactly once, every item sells
// exactly its stock, and the buyers (the same ten users for every item) get
// one order per item. A replay returns the committed orders again and
// decides nothing new.
func TestBatchWritersRaceOneManyItemBatch(t *testing.T) {
	t.Parallel()
	const items, buyers = 30, 10
	mysql := make([]int64, items)
	for i := range mysql {
		mysql[i] = buyers
	}
	m := newManyEnv(t, 1, mysql, mysql)
	groups := m.admitAll(users(1, buyers))
	w := m.writer()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; ; attempt++ {
				_, short, err := w.WriteBatch(ctx, groups)
				if err == nil && short == nil {
					return
				}
				if attempt > 200 {
					t.Errorf("no commit after %d attempts: short %v, %v", attempt, short, err)
					return
				}
				// Another writer holds rows: wait for it, as the
				// consumer's fallback waits for a busy row, then retry.
				if err := m.awaitRows(ctx); err != nil {
					t.Errorf("wait for the stock rows: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := m.decided(); got != items*buyers {
		t.Errorf("%d decisions, want %d", got, items*buyers)
	}
	for _, id := range m.items {
		m.checkMySQL(id, buyers)
	}
	res, short, err := w.WriteBatch(ctx, groups)
	if err != nil || short != nil {
		t.Fatalf("replay: short %v, %v", short, err)
	}
	for i, r := range res {
		if r.ItemID != m.items[i] || len(r.Ordered) != buyers || len(r.New) != 0 {
			t.Errorf("replay of item %d: %+v; want item %d, %d orders read back and nothing new", i, r, m.items[i], buyers)
		}
	}
}

// Two consumer replicas of one group drain a 20-item sale delivered twice
// over 4 partitions (so both write the same requests concurrently): exactly
// one order per request and the invariants per item, in MySQL and Redis.
func TestReplicasRaceRedeliveredManyItemBatch(t *testing.T) {
	t.Parallel()
	const items, buyers = 20, 15
	mysql := make([]int64, items)
	for i := range mysql {
		mysql[i] = 10 + int64(i%3)*10 // 10, 20 or 30: some items sell out in Redis
	}
	m := newManyEnv(t, 4, mysql, mysql)
	var msgs []orderlog.OrderMessage
	for i, id := range m.items {
		n := int(min(mysql[i], buyers))
		msgs = append(msgs, m.of(id).admit(users(1, n))...)
	}
	vals := encode(t, msgs)
	m.produce(append(vals, vals...), false)
	cfg := m.config()
	r1 := m.start(cfg, nil, nil)
	r2 := m.start(cfg, nil, nil)
	m.waitDecided(int64(len(msgs)), 60*time.Second)
	m.waitDrained(60 * time.Second)
	r1.stop(t)
	r2.stop(t)
	if got := m.decided(); got != int64(len(msgs)) {
		t.Errorf("%d decisions, want %d", got, len(msgs))
	}
	for i, id := range m.items {
		m.checkMySQL(id, min(mysql[i], buyers))
		m.of(id).checkInvariants()
	}
}

// One item of six is short of stock in MySQL (3 units for 10 admitted
// requests): the batch transaction names it and commits nothing; the
// consumer decides it request by request (3 ORDERED, 7 sold_out) and the
// five others set-based, each exact.
func TestShortItemIsDecidedApart(t *testing.T) {
	t.Parallel()
	mysql := []int64{10, 10, 3, 10, 10, 10}
	redis := []int64{10, 10, 10, 10, 10, 10}
	m := newManyEnv(t, 1, mysql, redis)
	groups := m.admitAll(users(1, 10))
	_, short, err := m.writer().WriteBatch(context.Background(), groups)
	if err != nil || len(short) != 1 || short[0] != 2 {
		t.Fatalf("WriteBatch: short %v, %v; want [2]", short, err)
	}
	if got := m.decided(); got != 0 {
		t.Fatalf("a short batch committed %d decisions", got)
	}
	m.produce(encode(t, flat(groups)), true)
	r := m.start(m.config(), nil, nil)
	m.waitDecided(60, 60*time.Second)
	m.waitDrained(60 * time.Second)
	r.stop(t)
	for i, id := range m.items {
		m.checkMySQL(id, mysql[i])
		m.of(id).checkInvariants()
	}
	if got := m.count("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ? AND reason = ?", m.items[2], store.ReasonSoldOut); got != 7 {
		t.Errorf("short item: %d sold_out, want 7", got)
	}
}

// An item whose row another transaction holds locked, in one batch with two
// free items: the batch does not wait for it (the lock is held past the
// batch's deadline) but names it to be decided apart, with nothing
// committed, and the free items then commit in a batch of their own. A
// batch that waited on the row held the free items' rows locked until the
// server's lock wait timeout (50 s), even after its deadline had closed
// the connection: TestKilledWithTwoBatchesInFlight decided none of item A
// in 60 s on a loaded CI machine.
func TestLockedItemIsDecidedApart(t *testing.T) {
	t.Parallel()
	m := newManyEnv(t, 1, []int64{10, 10, 10}, []int64{10, 10, 10})
	groups := m.admitAll(users(1, 4))
	ctx := context.Background()
	lock, err := m.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	var stk int64
	if err := lock.QueryRowContext(ctx, "SELECT stock FROM items WHERE id = ? FOR UPDATE", m.items[1]).Scan(&stk); err != nil {
		t.Fatal(err)
	}
	w := m.writer()
	w.TxTimeout = 5 * time.Second
	_, apart, err := w.WriteBatch(ctx, groups)
	if err != nil || len(apart) != 1 || apart[0] != 1 {
		t.Fatalf("WriteBatch with item 1 locked: apart %v, %v; want [1]", apart, err)
	}
	if got := m.decided(); got != 0 {
		t.Fatalf("a batch with a locked item committed %d decisions", got)
	}
	res, apart, err := w.WriteBatch(ctx, [][]orderlog.OrderMessage{groups[0], groups[2]})
	if err != nil || apart != nil || len(res) != 2 || len(res[0].Ordered) != 4 || len(res[1].Ordered) != 4 {
		t.Fatalf("WriteBatch of the free items: %+v apart %v, %v", res, apart, err)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	m.checkMySQL(m.items[0], 4)
	m.checkMySQL(m.items[2], 4)
}

// Requests of an item MySQL does not have, in one batch with a known item's:
// they are REJECTED unknown_item and the known item's are ORDERED, in one
// transaction.
func TestUnknownItemsInAManyItemBatch(t *testing.T) {
	t.Parallel()
	m := newManyEnv(t, 1, []int64{5}, []int64{5})
	ghost := testenv.ItemID()
	known := m.of(m.items[0]).admit(users(1, 3))
	unknown := make([]orderlog.OrderMessage, 2)
	for i := range unknown {
		unknown[i] = orderlog.OrderMessage{V: orderlog.MessageVersion, RequestID: known[i].RequestID + "g", ItemID: ghost, UserID: int64(i + 1), Qty: 1}
	}
	res, short, err := m.writer().WriteBatch(context.Background(), [][]orderlog.OrderMessage{unknown, known})
	if err != nil || short != nil {
		t.Fatalf("WriteBatch: short %v, %v", short, err)
	}
	if r := res[0]; r.ItemID != ghost || len(r.Ordered) != 0 || len(r.Rejected) != 2 || r.New[[2]string{string(store.Rejected), store.ReasonUnknownItem}] != 2 {
		t.Errorf("unknown item: %+v; want 2 REJECTED %s", r, store.ReasonUnknownItem)
	}
	if r := res[1]; len(r.Ordered) != 3 || len(r.Rejected) != 0 {
		t.Errorf("known item: %+v; want 3 orders", r)
	}
	m.checkMySQL(m.items[0], 3)
	if got := m.count("SELECT COUNT(*) FROM request_outcomes WHERE item_id = ? AND reason = ?", ghost, store.ReasonUnknownItem); got != 2 {
		t.Errorf("%d unknown_item decisions, want 2", got)
	}
}

// One buyer's order of one item of three fails permanently (a trigger
// SIGNALs error 1406): the batch falls back to one transaction per item,
// that item's other requests and both other items are ordered, and only the
// bad message is given up (REJECTED unprocessable, one DLQ letter).
func TestPermanentErrorInOneItemOfABatch(t *testing.T) {
	t.Parallel()
	m := newManyEnv(t, 1, []int64{10, 10, 10}, []int64{10, 10, 10})
	groups := [][]orderlog.OrderMessage{
		m.of(m.items[0]).admit(users(1, 5)),
		m.of(m.items[1]).admit(users(101, 5)),
		m.of(m.items[2]).admit(users(201, 5)),
	}
	const badUser = 103
	m.failOrders(1406, "Data too long for column ''request_id'' at row 1", badUser)
	_, _, err := m.writer().WriteBatch(context.Background(), groups)
	if err == nil || store.IsTransient(err) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteBatch with a failing row: %v; want a permanent error", err)
	}
	m.produce(encode(t, flat(groups)), true)
	cfg := m.config()
	cfg.GiveUpAfter = 500 * time.Millisecond
	r := m.start(cfg, nil, nil)
	m.waitDecided(15, 60*time.Second)
	m.waitDrained(60 * time.Second)
	r.stop(t)
	m.checkMySQL(m.items[0], 5)
	m.checkMySQL(m.items[1], 4)
	m.checkMySQL(m.items[2], 5)
	if got := m.count("SELECT COUNT(*) FROM request_outcomes WHERE user_id = ? AND reason = ?", badUser, store.ReasonUnprocessable); got != 1 {
		t.Errorf("bad request: %d unprocessable decisions, want 1", got)
	}
	if got := m.dlqCount(); got != 1 {
		t.Errorf("DLQ holds %d messages, want 1", got)
	}
}
