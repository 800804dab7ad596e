package rebalance

import (
	"context"
	"slices"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/catalog"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Redis holding more in a donor than MySQL does is a broken invariant (a
// Redis failover without WAIT lost writes MySQL has). The transfer still
// ends: it moves what MySQL's donor has (10 of the 12 planned), is DONE, so
// it is not retried, leaves TransfersLive (sold out can be answered again)
// and no longer blocks a warm; the Redis donor is reconciled down to MySQL
// (15 -> 0), never up. All 20 units both stores agree on stay sellable,
// and the units counter counts the 10 that moved.
func TestTransferInvariantBroken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.item(20, 2)
	if err := e.rdb.Set(ctx, stock.BucketKeys(item, 0).Stock, 15, 0).Err(); err != nil {
		t.Fatal(err)
	}
	tr, err := PlanTransfer(ctx, e.db, item, 2, 0, 1, 12)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // a repeat, or a second driver, changes nothing
		if d, err := e.r.run(ctx, tr); err != nil || d.state != store.TransferDone || d.won != (i == 0) {
			t.Fatalf("drive #%d = %+v, %v; want DONE, won only the first time", i+1, d, err)
		}
	}
	if got, err := getTransfer(ctx, e.db, tr.ID); err != nil || got.Qty != 10 {
		t.Fatalf("transfer = %+v, %v; want qty 10, what MySQL's donor had", got, err)
	}
	s := e.conserved(item, 2, 20)
	if !slices.Equal(s.redis, []int64{0, 20}) || s.mysql[0].Stock != 0 || s.mysql[1].Stock != 20 {
		t.Fatalf("Redis %v, MySQL %+v; want both [0 20]", s.redis, s.mysql)
	}
	e.settled(item)
	if v := e.metric("flashsale_bucket_transfers_total", "result", "short"); v != 1 {
		t.Fatalf("transfers cut short by MySQL = %v; want 1", v)
	}
	if v := e.metric("flashsale_bucket_transfer_units_total"); v != 10 {
		t.Errorf("units moved = %v; want 10, what the cut transfer moved (12 were planned)", v)
	}
	cat := catalog.New(e.db, e.st, testenv.NoLag)
	if _, err := cat.Warm(ctx, item); err != nil {
		t.Fatalf("warm after the transfer: %v", err)
	}
}

// The reconciliation counts the donor's pending reservations and MySQL's
// restores Redis has not applied yet, and never raises the donor: MySQL's
// donor has 5, 3 of them reserved in Redis and 1 a restore still on its way
// to Redis, so 1 unit moves and Redis' donor ends at 0 (its 3 reservations
// are covered by MySQL's remaining 4, less the restore's 1).
func TestTransferShortCountsPendingAndRestores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	item := e.item(20, 2)
	e.admit(item, 2, 0, 3) // bucket 0: MySQL 10, Redis 7, 3 pending
	// MySQL's donor drops to 5 behind Redis' back (as a lost Redis write
	// leaves it), and holds a restore Redis has not seen.
	if _, err := e.db.ExecContext(ctx, "UPDATE item_buckets SET stock = 5, total_stock = 5 WHERE item_id = ? AND bucket = 0", item); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(ctx, "INSERT INTO stock_restores (order_id, item_id, qty, bucket) VALUES (?, ?, 1, 0)", item, item); err != nil {
		t.Fatal(err)
	}
	tr, err := PlanTransfer(ctx, e.db, item, 2, 0, 1, 6)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.r.run(ctx, tr); err != nil || d.state != store.TransferDone {
		t.Fatalf("drive = %+v, %v; want DONE", d, err)
	}
	if st, _ := e.st.BucketStocks(ctx, item, 2); st[0] != 0 || st[1] != 11 {
		t.Fatalf("Redis = %v; want [0 11]", st)
	}
	if rows, _ := store.BucketRows(ctx, e.db, item, false); rows[0].Stock != 4 || rows[1].Stock != 11 {
		t.Fatalf("MySQL rows = %+v; want 4 and 11", rows)
	}
	e.settled(item)

	// Nothing free in MySQL: nothing moves, the transfer is ABANDONED and
	// the donor is still not raised above MySQL less its reservations.
	tr, err = PlanTransfer(ctx, e.db, item, 2, 1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(ctx, "UPDATE item_buckets SET stock = 0, total_stock = 0 WHERE item_id = ? AND bucket = 1", item); err != nil {
		t.Fatal(err)
	}
	if d, err := e.r.run(ctx, tr); err != nil || d.state != store.TransferAbandoned {
		t.Fatalf("drive from an empty MySQL donor = %+v, %v; want ABANDONED", d, err)
	}
	if st, _ := e.st.BucketStocks(ctx, item, 2); st[0] != 0 || st[1] != 0 {
		t.Fatalf("Redis = %v; want [0 0]", st)
	}
	e.settled(item)
}
