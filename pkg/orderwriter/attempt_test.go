package orderwriter_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderwriter"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// oneConn is a pool of one connection on e's database, so the session's
// statement counters are the writer's.
func oneConn(t *testing.T, e *env) (*sql.DB, func() int64) {
	t.Helper()
	c := testenv.Common(t)
	c.MySQLDSN = e.dsn
	db, err := store.Open(context.Background(), c.DSN(), 1, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxIdleConns(1)
	selects := func() int64 {
		t.Helper()
		var name string
		var n int64
		if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Com_select'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	return db, selects
}

// A first delivery is written without reading its requests' earlier
// decisions or the item's buyers (two SELECTs: the item and the read-back
// of the new orders); a replay of it meets its own rows' unique keys and is
// decided again with those reads, answering the orders of the first write
// and deciding nothing new; a buyer who already holds the item (Redis lost
// their mark) is refused duplicate_buyer, naming the request that holds it.
func TestFirstAttemptReadsNoEarlierDecisions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 100, 100)
	db, selects := oneConn(t, e)
	w := &orderwriter.ItemWriter{DB: db, PaymentWindow: time.Minute, TxTimeout: 10 * time.Second}
	ctx := context.Background()
	msgs := e.admit(users(1, 10))

	before := selects()
	first, err := w.WriteItem(ctx, e.item, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if n := selects() - before; n != 2 { // SHOW SESSION STATUS counts as Com_show_status
		t.Errorf("a first delivery ran %d SELECTs, want 2 (the item, the new orders' read-back)", n)
	}
	if len(first.Ordered) != 10 || first.New[[2]string{string(store.Ordered), ""}] != 10 {
		t.Fatalf("first write: %d orders, new %v", len(first.Ordered), first.New)
	}

	replay, err := w.WriteItem(ctx, e.item, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(replay.New) != 0 {
		t.Errorf("a replay decided %v anew", replay.New)
	}
	ids := map[string]int64{}
	for _, o := range first.Ordered {
		ids[o.RequestID] = o.ID
	}
	if len(replay.Ordered) != len(first.Ordered) {
		t.Fatalf("replay answered %d orders, want %d", len(replay.Ordered), len(first.Ordered))
	}
	for _, o := range replay.Ordered {
		if ids[o.RequestID] != o.ID {
			t.Errorf("replay answered order %d for %s, the first write %d", o.ID, o.RequestID, ids[o.RequestID])
		}
	}

	again := msgs[0]
	again.RequestID = reqid.NewIn(e.item, again.Bucket(), time.Now())
	dup, err := w.WriteItem(ctx, e.item, []orderlog.OrderMessage{again})
	if err != nil {
		t.Fatal(err)
	}
	if len(dup.Ordered) != 0 || len(dup.Rejected) != 1 || dup.Rejected[0].Reason != store.ReasonDuplicateBuyer ||
		dup.Holders[again.RequestID] != msgs[0].RequestID {
		t.Fatalf("a buyer who holds the item: ordered %d, rejected %+v, holders %v", len(dup.Ordered), dup.Rejected, dup.Holders)
	}
	if n := e.count("SELECT COUNT(*) FROM orders WHERE item_id = ?", e.item); n != 10 {
		t.Errorf("%d orders, want 10", n)
	}
}

// A many-item round's first attempt reads neither either: the items, the
// new orders' read-back and the stock rows' lock are its SELECTs; its
// replay is decided again with the reads and decides nothing new.
func TestFirstBatchAttemptReadsNoEarlierDecisions(t *testing.T) {
	t.Parallel()
	m := newManyEnv(t, 1, []int64{20, 20, 20}, []int64{20, 20, 20})
	db, selects := oneConn(t, m.env)
	w := &orderwriter.BatchWriter{DB: db, PaymentWindow: time.Minute, TxTimeout: 10 * time.Second}
	ctx := context.Background()
	groups := m.admitAll(users(1, 5))

	before := selects()
	first, apart, err := w.WriteBatch(ctx, groups)
	if err != nil || len(apart) != 0 {
		t.Fatalf("first write: apart %v, err %v", apart, err)
	}
	if n := selects() - before; n != 3 {
		t.Errorf("a first delivery ran %d SELECTs, want 3 (the items, the new orders' read-back, the stock rows' lock)", n)
	}
	replay, apart, err := w.WriteBatch(ctx, groups)
	if err != nil || len(apart) != 0 {
		t.Fatalf("replay: apart %v, err %v", apart, err)
	}
	for i := range groups {
		if len(first[i].Ordered) != 5 || len(replay[i].Ordered) != 5 || len(replay[i].New) != 0 {
			t.Errorf("item %d: first %d orders, replay %d orders and new %v", m.items[i], len(first[i].Ordered), len(replay[i].Ordered), replay[i].New)
		}
	}
	for _, id := range m.items {
		m.checkMySQL(id, 5)
	}
}
