package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TestInsertOrdersReturnsThemAsStored: the orders InsertOrdersOf returns are
// the rows MySQL holds (ids, times, every column), whatever the ids' step,
// and the read-back by id range never takes another writer's row for one of
// its own nor leaves one of its own out.
func TestInsertOrdersReturnsThemAsStored(t *testing.T) {
	db, _ := testenv.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("consecutive ids", func(t *testing.T) {
		rows := newOrders(testenv.ItemID(), 40)
		got := insertInTx(ctx, t, db, rows)
		sameAsStored(ctx, t, db, rows, got)
	})

	t.Run("ids three apart, as on a three-node Galera cluster", func(t *testing.T) {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SET SESSION auto_increment_increment = 3"); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(context.Background(), "SET SESSION auto_increment_increment = 1") //nolint:errcheck // the connection is closed next
		rows := newOrders(testenv.ItemID(), 40)
		got, err := store.InsertOrdersOf(ctx, conn, time.Minute, rows)
		if err != nil {
			t.Fatal(err)
		}
		sameAsStored(ctx, t, db, rows, got)
	})

	// Another INSERT's rows in the range, and some of ours outside it: the
	// range read starts one id late and so covers the next statement's
	// first row.
	t.Run("interleaved ids", func(t *testing.T) {
		ours := newOrders(testenv.ItemID(), 10)
		theirs := newOrders(testenv.ItemID(), 10)
		insertInTx(ctx, t, db, ours)
		insertInTx(ctx, t, db, theirs)
		stored, err := store.OrdersByRequest(ctx, db, requestIDs(ours))
		if err != nil {
			t.Fatal(err)
		}
		first := slices.MinFunc(stored, func(a, b store.Order) int { return int(a.ID - b.ID) }).ID
		for _, start := range []int64{first + 1, first + 5, 0} {
			got, err := store.InsertedOrders(ctx, db, start, requestIDs(ours))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(ours) {
				t.Fatalf("from id %d: %d orders read back, want %d", start, len(got), len(ours))
			}
			sameAsStored(ctx, t, db, ours, got)
		}
	})
}

func newOrders(item int64, n int) []store.ItemOrder {
	out := make([]store.ItemOrder, n)
	for i := range out {
		out[i] = store.ItemOrder{
			NewOrder: store.NewOrder{RequestID: fmt.Sprintf("rb-%d-%d-%s", item, i, testenv.Suffix()), UserID: int64(1000 + i), Qty: 1 + i%3},
			ItemID:   item, Bucket: i % 2, PriceCents: 1999,
		}
	}
	return out
}

func requestIDs(os []store.ItemOrder) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = o.RequestID
	}
	return out
}

func insertInTx(ctx context.Context, t *testing.T, db *sql.DB, rows []store.ItemOrder) []store.Order {
	t.Helper()
	var got []store.Order
	err := store.RunInTx(ctx, db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		var err error
		got, err = store.InsertOrdersOf(ctx, tx, time.Minute, rows)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// sameAsStored fails unless got is exactly the stored rows of rows' request
// ids, each once, with what was written.
func sameAsStored(ctx context.Context, t *testing.T, db *sql.DB, rows []store.ItemOrder, got []store.Order) {
	t.Helper()
	stored, err := store.OrdersByRequest(ctx, db, requestIDs(rows))
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(rows) {
		t.Fatalf("%d of %d orders stored", len(stored), len(rows))
	}
	want := map[string]store.Order{}
	for _, o := range stored {
		want[o.RequestID] = o
	}
	seen := map[string]bool{}
	for _, o := range got {
		if seen[o.RequestID] {
			t.Fatalf("order %s returned twice", o.RequestID)
		}
		seen[o.RequestID] = true
		w, ok := want[o.RequestID]
		if !ok {
			t.Fatalf("returned order %s (id %d) is not one of the inserted", o.RequestID, o.ID)
		}
		if o.ID != w.ID || !o.CreatedAt.Equal(w.CreatedAt) || !o.ExpiresAt.Equal(w.ExpiresAt) || o.Status != w.Status ||
			o.UserID != w.UserID || o.ItemID != w.ItemID || o.Qty != w.Qty || o.PriceCents != w.PriceCents {
			t.Fatalf("returned %+v, stored %+v", o, w)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("returned %d orders, want %v", len(seen), slices.Sorted(maps.Keys(want)))
	}
	for _, o := range got {
		if o.Status != store.Unpaid || o.ExpiresAt.Sub(o.CreatedAt) != time.Minute {
			t.Fatalf("order %s: status %s, window %v", o.RequestID, o.Status, o.ExpiresAt.Sub(o.CreatedAt))
		}
	}
}
