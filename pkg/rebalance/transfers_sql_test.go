package rebalance

// The stock_transfers statements (transfers_sql.go, movesql.go) against
// MySQL alone; the transfers' Redis steps are steps_test.go.

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// sqlItem creates an item of total units laid out over n buckets,
// its sale window open.
func sqlItem(t *testing.T, db *sql.DB, total int64, n int, start, end time.Time) int64 {
	t.Helper()
	id := testenv.ItemID()
	err := store.RunInTx(context.Background(), db, sql.LevelDefault, func(tx *sql.Tx) error {
		_, err := store.UpsertItem(context.Background(), tx, store.Item{ID: id, Name: "t", PriceCents: 100, TotalStock: total,
			PerUserLimit: 1, StartsAt: start, EndsAt: end, Buckets: n})
		return err
	})
	if err != nil {
		t.Fatalf("create item: %v", err)
	}
	return id
}

// openSQLItem creates an item of total units in n buckets in MySQL only,
// its sale open (from a minute ago for an hour).
func openSQLItem(t *testing.T, db *sql.DB, total int64, n int) int64 {
	t.Helper()
	now := time.Now()
	return sqlItem(t, db, total, n, now.Add(-time.Minute), now.Add(time.Hour))
}

func rowsOf(t *testing.T, db *sql.DB, id int64) []store.StockRow {
	t.Helper()
	rows, err := store.BucketRows(context.Background(), db, id, false)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestTransferLifecycle(t *testing.T) {
	t.Parallel()
	db, _ := testenv.MySQL(t)
	ctx := context.Background()
	item := openSQLItem(t, db, 40, 4)

	if _, err := PlanTransfer(ctx, db, item, 3, 0, 1, 5); !errors.Is(err, ErrBucketsChanged) {
		t.Fatalf("plan for 3 buckets of a 4-bucket item: err = %v; want ErrBucketsChanged", err)
	}
	for _, bad := range [][3]int{{1, 1, 1}, {0, 4, 1}, {-1, 0, 1}, {0, 1, 0}} {
		if _, err := PlanTransfer(ctx, db, item, 4, bad[0], bad[1], int64(bad[2])); err == nil {
			t.Errorf("plan %v accepted", bad)
		}
	}
	tr, err := PlanTransfer(ctx, db, item, 4, 2, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != store.TransferPlanned || tr.ItemID != item || tr.From != 2 || tr.To != 1 || tr.Qty != 4 || tr.CreatedAt.IsZero() {
		t.Fatalf("planned = %+v", tr)
	}
	if n, _ := store.OpenTransfersOf(ctx, db, item); n != 1 {
		t.Fatalf("open transfers = %d; want 1", n)
	}
	if ok, err := completeTransfer(ctx, db, tr.ID); err != nil || ok {
		t.Fatalf("complete a PLANNED transfer = %v, %v; want no change", ok, err)
	}
	for i := range 2 {
		moved, err := moveTransfer(ctx, db, tr, noCut(t, tr.Qty))
		if err != nil || moved.won != (i == 0) || (i == 0 && (moved.state != store.TransferMoved || moved.qty != 4)) {
			t.Fatalf("move #%d = %+v, %v; want MOVED 4 only the first time", i+1, moved, err)
		}
	}
	want := []store.StockRow{{Bucket: 0, TotalStock: 10, Stock: 10}, {Bucket: 1, TotalStock: 14, Stock: 14}, {Bucket: 2, TotalStock: 6, Stock: 6}, {Bucket: 3, TotalStock: 10, Stock: 10}}
	if got := rowsOf(t, db, item); !slices.Equal(got, want) {
		t.Fatalf("rows after the move = %+v; want %+v", got, want)
	}
	if ok, err := abandonTransfer(ctx, db, tr.ID); err != nil || ok {
		t.Fatalf("abandon a MOVED transfer = %v, %v; want no change", ok, err)
	}
	if ok, err := completeTransfer(ctx, db, tr.ID); err != nil || !ok {
		t.Fatalf("complete = %v, %v", ok, err)
	}
	got, err := getTransfer(ctx, db, tr.ID)
	if err != nil || got.State != store.TransferDone || !got.CreatedAt.Equal(tr.CreatedAt) {
		t.Fatalf("transfer = %+v, %v; want DONE", got, err)
	}
	if _, err := getTransfer(ctx, db, tr.ID+1000); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown transfer: err = %v", err)
	}

	ab, err := PlanTransfer(ctx, db, item, 4, 0, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := abandonTransfer(ctx, db, ab.ID); err != nil || !ok {
		t.Fatalf("abandon = %v, %v", ok, err)
	}
	if moved, err := moveTransfer(ctx, db, ab, noCut(t, ab.Qty)); err != nil || moved.won {
		t.Fatalf("move an ABANDONED transfer = %v, %v; want no change", moved, err)
	}
	if got := rowsOf(t, db, item); !slices.Equal(got, want) {
		t.Fatalf("rows changed by an abandoned transfer: %+v", got)
	}
}

// noCut is the cutFunc of a donor that is not short: it answers the
// transfer's qty, as Redis does for a transfer it never cut.
func noCut(t *testing.T, qty int64) cutFunc {
	return func(_ context.Context, _ int64, short bool) (int64, error) {
		if short {
			t.Error("cut called short for a donor that has the qty")
		}
		return qty, nil
	}
}

// A donor row with less than the qty is a broken invariant: moveTransfer
// asks cut (with what MySQL has free: the row less restores Redis has not
// applied) and moves what it answers: less than planned, recorded as the
// transfer's qty, or nothing (ABANDONED). An answer above what MySQL holds
// is refused and changes nothing.
func TestMoveTransferDonorShort(t *testing.T) {
	t.Parallel()
	db, _ := testenv.MySQL(t)
	ctx := context.Background()
	item := openSQLItem(t, db, 8, 2)
	if _, err := db.ExecContext(ctx, "INSERT INTO stock_restores (order_id, item_id, qty, bucket) VALUES (?, ?, 1, 3)", item, item); err != nil {
		t.Fatal(err) // bucket 3 MOD 2 is bucket 1
	}
	answer := func(qty int64) cutFunc {
		return func(_ context.Context, free int64, short bool) (int64, error) {
			if !short || free != 3 {
				t.Errorf("cut(free %d, short %v); want free 3 (4 less 1 unapplied), short", free, short)
			}
			return qty, nil
		}
	}
	tr, err := PlanTransfer(ctx, db, item, 2, 1, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := moveTransfer(ctx, db, tr, answer(5)); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("move 5 from a bucket of 4: err = %v; want ErrInvariant", err)
	}
	if got, _ := getTransfer(ctx, db, tr.ID); got.State != store.TransferPlanned || got.Qty != 5 {
		t.Fatalf("transfer after the refused move = %+v; want PLANNED 5", got)
	}
	if got := rowsOf(t, db, item); !slices.Equal(got, []store.StockRow{{Bucket: 0, TotalStock: 4, Stock: 4}, {Bucket: 1, TotalStock: 4, Stock: 4}}) {
		t.Fatalf("rows changed by a refused move: %+v", got)
	}
	if mv, err := moveTransfer(ctx, db, tr, answer(2)); err != nil || mv != (moved{won: true, state: store.TransferMoved, qty: 2}) {
		t.Fatalf("move cut to 2 = %+v, %v", mv, err)
	}
	if got, _ := getTransfer(ctx, db, tr.ID); got.State != store.TransferMoved || got.Qty != 2 {
		t.Fatalf("transfer = %+v; want MOVED 2", got)
	}
	if got := rowsOf(t, db, item); !slices.Equal(got, []store.StockRow{{Bucket: 0, TotalStock: 6, Stock: 6}, {Bucket: 1, TotalStock: 2, Stock: 2}}) {
		t.Fatalf("rows after a move cut to 2 = %+v", got)
	}

	ab, err := PlanTransfer(ctx, db, item, 2, 1, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM stock_restores WHERE order_id = ?", item); err != nil {
		t.Fatal(err)
	}
	cutToNothing := func(_ context.Context, free int64, short bool) (int64, error) { return 0, nil }
	if mv, err := moveTransfer(ctx, db, ab, cutToNothing); err != nil || mv != (moved{won: true, state: store.TransferAbandoned}) {
		t.Fatalf("move cut to nothing = %+v, %v; want ABANDONED", mv, err)
	}
	if got := rowsOf(t, db, item); !slices.Equal(got, []store.StockRow{{Bucket: 0, TotalStock: 6, Stock: 6}, {Bucket: 1, TotalStock: 2, Stock: 2}}) {
		t.Fatalf("rows changed by a move cut to nothing: %+v", got)
	}
}

// PlanTransfer waits for a warm's (or a re-bucketing's) lock on the item
// row, so the warm's check for open transfers cannot miss it.
func TestPlanTransferWaitsForItemLock(t *testing.T) {
	t.Parallel()
	db, _ := testenv.MySQL(t)
	ctx := context.Background()
	item := openSQLItem(t, db, 8, 2)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := store.GetItemForUpdate(ctx, tx, item); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := PlanTransfer(ctx, db, item, 2, 0, 1, 1)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("PlanTransfer finished (%v) while the item row was locked", err)
	case <-time.After(300 * time.Millisecond):
	}
	if n, err := store.OpenTransfersOf(ctx, tx, item); err != nil || n != 0 {
		t.Fatalf("the lock holder sees %d open transfers (%v); want 0", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("PlanTransfer after the lock: %v", err)
	}
}

func TestOpenTransfersAndItems(t *testing.T) {
	t.Parallel()
	db, _ := testenv.MySQL(t)
	ctx := context.Background()
	now := time.Now()
	open := openSQLItem(t, db, 8, 2)
	later := sqlItem(t, db, 8, 4, now.Add(time.Hour), now.Add(2*time.Hour))
	over := sqlItem(t, db, 8, 2, now.Add(-2*time.Hour), now.Add(-time.Hour))
	single := openSQLItem(t, db, 8, 1)
	_ = single

	got, err := queryItems(ctx, db, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (bucketedItem{ID: open, Buckets: 2}) {
		t.Fatalf("rebalance items = %+v; want only %d (2 buckets)", got, open)
	}
	if got, _ := queryItems(ctx, db, now.Add(time.Hour-30*time.Second), time.Minute); len(got) != 2 {
		t.Fatalf("rebalance items 30s before the next sale (margin 1m) = %+v; want both open and later", got)
	}
	a, err := PlanTransfer(ctx, db, over, 2, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PlanTransfer(ctx, db, later, 4, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err = queryItems(ctx, db, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	for _, it := range got {
		ids[it.ID] = true
	}
	if len(got) != 3 || !ids[open] || !ids[over] || !ids[later] {
		t.Fatalf("rebalance items with open transfers = %+v; want %d, %d and %d", got, open, over, later)
	}
	ts, err := openTransfers(ctx, db, 10)
	if err != nil || len(ts) != 2 || ts[0].ID != a.ID || ts[1].ID != b.ID {
		t.Fatalf("open transfers = %+v, %v; want %d then %d", ts, err, a.ID, b.ID)
	}
	if ts, _ := openTransfers(ctx, db, 1); len(ts) != 1 || ts[0].ID != a.ID {
		t.Fatalf("open transfers, limit 1 = %+v; want the oldest", ts)
	}
}
