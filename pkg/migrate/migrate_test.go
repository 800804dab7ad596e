package migrate_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/schema"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testenv.MySQL applied the migrations once already: applying them again,
// from several runners at once, must change nothing and fail nothing.
func TestApplyTwiceAndConcurrently(t *testing.T) {
	db, _ := testenv.MySQL(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied, err := migrate.Apply(ctx, db, schema.FS, quiet)
			if err != nil {
				t.Errorf("apply: %v", err)
			}
			if len(applied) != 0 {
				t.Errorf("applied %v again", applied)
			}
		}()
	}
	wg.Wait()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	migs, _ := migrate.Load(schema.FS)
	if n != len(migs) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(migs))
	}
	for _, table := range []string{"items", "orders", "request_outcomes", "stock_restores"} {
		if _, err := db.ExecContext(ctx, "SELECT 1 FROM "+table+" LIMIT 1"); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
}

func TestNewMigrationAppliedOnceInOrder(t *testing.T) {
	db, _ := testenv.MySQL(t)
	ctx := context.Background()
	fsys := fstest.MapFS{
		"0001_a.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS m_a (id INT PRIMARY KEY)")},
		"0002_b.sql": {Data: []byte("-- two statements\nINSERT INTO m_a VALUES (1)\n-- +statement\nINSERT INTO m_a VALUES (2)")},
	}
	for i := range 2 {
		applied, err := migrate.Apply(ctx, db, fsys, quiet)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{0: 2, 1: 0}[i]; len(applied) != want {
			t.Fatalf("run %d applied %v, want %d", i, applied, want)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM m_a").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows %d %v", n, err)
	}
	migs, _ := migrate.Load(fsys)
	for _, m := range migs {
		var sum, state string
		if err := db.QueryRowContext(ctx, "SELECT checksum, state FROM schema_migrations WHERE version = ?", m.Version).Scan(&sum, &state); err != nil {
			t.Fatalf("%s: %v", m.Version, err)
		}
		if sum != m.Checksum || state != "applied" {
			t.Errorf("%s recorded as %s %s, want %s applied", m.Version, sum, state, m.Checksum)
		}
	}
}

// The CHECK constraints are the last word on correctness: MySQL itself
// refuses negative stock (I7).
func TestStockCannotGoNegative(t *testing.T) {
	db, _ := testenv.MySQL(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `INSERT INTO items (id, name, price_cents, total_stock, stock, per_user_limit, starts_at, ends_at)
		VALUES (1, 'x', 100, 1, 1, 1, NOW(3), NOW(3) + INTERVAL 1 HOUR)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE items SET stock = stock - 2 WHERE id = 1"); err == nil {
		t.Fatal("stock went negative without an error")
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO orders (request_id, user_id, item_id, qty, price_cents, expires_at) VALUES ('a', 1, 1, 1, 1, NOW(3)), ('b', 1, 1, 1, 1, NOW(3))`); err == nil {
		t.Fatal("two orders for one (user, item) were accepted")
	}
}
