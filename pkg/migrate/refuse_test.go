package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/flashsale-dev/flashsale/pkg/migrate"
)

// A migration edited after it was applied is refused, naming the file, and
// nothing of a later migration runs.
func TestEditedMigrationRefused(t *testing.T) {
	db := emptyDB(t)
	ctx := context.Background()
	fsys := fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE m_a (id INT PRIMARY KEY)")}}
	if _, err := migrate.Apply(ctx, db, fsys, quiet); err != nil {
		t.Fatal(err)
	}
	fsys["0001_a.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE m_a (id BIGINT PRIMARY KEY)")}
	fsys["0002_b.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE m_b (id INT PRIMARY KEY)")}
	applied, err := migrate.Apply(ctx, db, fsys, quiet)
	if !errors.Is(err, migrate.ErrEdited) {
		t.Fatalf("edited migration: err %v (applied %v), want ErrEdited", err, applied)
	}
	if !strings.Contains(err.Error(), "0001_a.sql") {
		t.Errorf("message does not name the file: %v", err)
	}
	if len(applied) != 0 {
		t.Errorf("applied %v after refusing", applied)
	}
	if _, err := db.ExecContext(ctx, "SELECT 1 FROM m_b"); err == nil {
		t.Error("0002 ran although 0001 was refused")
	}
}

// A migration whose second statement fails is recorded as applying; the next
// run refuses it with a message naming the migration, the statement, the
// server's error and the repair, instead of running its first statement again.
func TestHalfAppliedMigrationRefused(t *testing.T) {
	db := emptyDB(t)
	ctx := context.Background()
	fsys := fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE m_a (id INT PRIMARY KEY)\n" +
		"-- +statement\nINSERT INTO m_missing VALUES (1)\n" +
		"-- +statement\nINSERT INTO m_a VALUES (2)\n")}}
	if _, err := migrate.Apply(ctx, db, fsys, quiet); err == nil {
		t.Fatal("a failing statement did not fail the run")
	}
	for run := range 2 {
		_, err := migrate.Apply(ctx, db, fsys, quiet)
		if !errors.Is(err, migrate.ErrHalfApplied) {
			t.Fatalf("run %d after the failure: err %v, want ErrHalfApplied", run+2, err)
		}
		if run == 0 {
			t.Logf("refusal: %v", err)
		}
		for _, want := range []string{"0001_a.sql", "statement 2 of 3", "m_missing", "UPDATE schema_migrations", "DELETE FROM schema_migrations"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message lacks %q: %v", want, err)
			}
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM m_a").Scan(&n); err != nil || n != 0 {
		t.Fatalf("m_a rows %d (%v): statement 3 ran", n, err)
	}
}

// A first statement the server refuses ran nothing: the migration is not left
// half applied, and the corrected file applies on the next run.
func TestFirstStatementRefusedLeavesNothing(t *testing.T) {
	db := emptyDB(t)
	ctx := context.Background()
	fsys := fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE m_a (id INT PRIMARY KEY")}}
	if _, err := migrate.Apply(ctx, db, fsys, quiet); err == nil {
		t.Fatal("a statement with a syntax error did not fail the run")
	}
	fsys["0001_a.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE m_a (id INT PRIMARY KEY)")}
	if applied, err := migrate.Apply(ctx, db, fsys, quiet); err != nil || len(applied) != 1 {
		t.Fatalf("corrected file: applied %v, err %v", applied, err)
	}
}
