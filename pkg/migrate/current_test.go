package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/schema"
)

// A deployable's check: a database migrated from the same files is current;
// one lacking a migration, or with none at all, is behind, and the error
// names what is missing and says how to catch up.
func TestRequireCurrent(t *testing.T) {
	ctx := context.Background()
	db, _ := testenv.MySQL(t)
	if err := migrate.RequireCurrent(ctx, db, schema.FS); err != nil {
		t.Fatalf("migrated database: %v", err)
	}

	ahead := fstest.MapFS{}
	migs, _ := migrate.Load(schema.FS)
	for _, m := range migs {
		b, _ := schema.FS.ReadFile(m.Version + ".sql")
		ahead[m.Version+".sql"] = &fstest.MapFile{Data: b}
	}
	ahead["9999_next.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE m_next (id INT PRIMARY KEY)")}
	err := migrate.RequireCurrent(ctx, db, ahead)
	if !errors.Is(err, migrate.ErrSchemaBehind) {
		t.Fatalf("a migration missing: err %v, want ErrSchemaBehind", err)
	}
	for _, want := range []string{"9999_next", "run setup (go run ./setup, or the setup Job)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}

	err = migrate.RequireCurrent(ctx, emptyDB(t), schema.FS)
	if !errors.Is(err, migrate.ErrSchemaBehind) {
		t.Fatalf("empty database: err %v, want ErrSchemaBehind", err)
	}
	for _, m := range migs {
		if !strings.Contains(err.Error(), m.Version) {
			t.Errorf("message lacks %s: %v", m.Version, err)
		}
	}
}

// A half-applied migration is not current either.
func TestRequireCurrentHalfApplied(t *testing.T) {
	ctx := context.Background()
	db := emptyDB(t)
	fsys := fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE m_a (id INT PRIMARY KEY)\n-- +statement\nINSERT INTO m_missing VALUES (1)")}}
	if _, err := migrate.Apply(ctx, db, fsys, quiet); err == nil {
		t.Fatal("a failing statement did not fail the run")
	}
	err := migrate.RequireCurrent(ctx, db, fsys)
	if !errors.Is(err, migrate.ErrSchemaBehind) || !strings.Contains(err.Error(), "0001_a half applied") {
		t.Fatalf("half applied: err %v, want ErrSchemaBehind naming 0001_a half applied", err)
	}
}
