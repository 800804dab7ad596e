package migrate_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"io/fs"
	"os"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/schema"
)

// A database migrated by the released runner (schema_migrations of version
// and applied_at only) from the released files (0002 in MariaDB-only syntax,
// releasedFiles) is adopted: none of them runs again, each row gets the
// embedded file's checksum, the files added since are applied once, and its
// tables are exactly those a fresh database gets from today's files, so
// adopting 0002's rewritten text is correct.
func TestOldFormatAdopted(t *testing.T) {
	db := emptyDB(t)
	ctx := context.Background()
	migs, err := migrate.Load(releasedFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    VARCHAR(128) NOT NULL PRIMARY KEY,
  applied_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`); err != nil {
		t.Fatal(err)
	}
	for _, m := range migs {
		for _, stmt := range m.Statements {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("released %s: %v", m.Version, err)
			}
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO schema_migrations (version) VALUES (?)", m.Version); err != nil {
			t.Fatal(err)
		}
	}

	// The released files are adopted, not run again; files added since the
	// release (the released files are 0001 and 0002 only) are applied once,
	// on the first run.
	all, err := migrate.Load(schema.FS)
	if err != nil {
		t.Fatal(err)
	}
	var newer []string
	for _, m := range all[len(migs):] {
		newer = append(newer, m.Version)
	}
	for run := range 2 {
		applied, err := migrate.Apply(ctx, db, schema.FS, quiet)
		want := newer
		if run > 0 {
			want = nil
		}
		if err != nil || !slices.Equal(applied, want) {
			t.Fatalf("run %d: applied %v, err %v; want %v", run+1, applied, err, want)
		}
	}
	if err := migrate.RequireCurrent(ctx, db, schema.FS); err != nil {
		t.Errorf("adopted database is not current: %v", err)
	}
	for _, m := range migs {
		b, err := fs.ReadFile(schema.FS, m.Version+".sql")
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		var got, state string
		if err := db.QueryRowContext(ctx, "SELECT checksum, state FROM schema_migrations WHERE version = ?", m.Version).Scan(&got, &state); err != nil {
			t.Fatalf("%s: %v", m.Version, err)
		}
		if got != hex.EncodeToString(sum[:]) || state != "applied" {
			t.Errorf("%s: checksum %s state %s, want %x applied", m.Version, got, state, sum)
		}
	}

	fresh, _ := testenv.MySQL(t)
	want, got := tableDefs(t, fresh), tableDefs(t, db)
	for name, def := range want {
		if name == "schema_migrations" {
			continue
		}
		if got[name] != def {
			t.Errorf("table %s of the adopted database:\n%s\nfresh:\n%s", name, got[name], def)
		}
	}
	if len(got) != len(want) {
		t.Errorf("adopted database has %d tables, fresh %d", len(got), len(want))
	}
}

// released0001 is the sha256 of 0001_init.sql as the released runner
// shipped it. Its text is today's, so the test reads it from schema.FS
// rather than from a copy, and checks that it still is.
const released0001 = "940feb2d42bc7d7ef0f88436cfb77065f43f452b8398e64239e64f94bbfc3c65"

// releasedFiles are the migrations the released runner shipped: 0001 as it
// stands in schema/ (unchanged since) and 0002 in its MariaDB-only text
// (testdata/released), since rewritten.
func releasedFiles(t *testing.T) fs.FS {
	t.Helper()
	init, err := fs.ReadFile(schema.FS, "0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(init); hex.EncodeToString(sum[:]) != released0001 {
		t.Fatalf("schema/0001_init.sql was edited after its release (sha256 %x): restore its text and put the change in a new migration", sum)
	}
	buckets, err := os.ReadFile("testdata/released/0002_stock_buckets.sql")
	if err != nil {
		t.Fatal(err)
	}
	return fstest.MapFS{
		"0001_init.sql":          {Data: init},
		"0002_stock_buckets.sql": {Data: buckets},
	}
}

// tableDefs returns SHOW CREATE TABLE of every table of db's database.
func tableDefs(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for _, n := range names {
		var name, def string
		if err := db.QueryRowContext(ctx, "SHOW CREATE TABLE "+n).Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		defs[n] = def
	}
	return defs
}
