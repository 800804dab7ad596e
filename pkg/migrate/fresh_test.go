package migrate_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// emptyDB creates a database with no tables at all, as testenv.MySQL does but
// without migrating it, and drops it when the test ends.
func emptyDB(t *testing.T) *sql.DB {
	t.Helper()
	c := testenv.Common(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := store.Open(ctx, c.DSN(), 2, 5*time.Second)
	if err != nil {
		t.Fatalf("MySQL unreachable: %v; start the local stack with `make stack-up`", err)
	}
	defer admin.Close()
	cfg, _ := mysql.ParseDSN(c.MySQLDSN)
	cfg.DBName += "_m" + testenv.Suffix()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+cfg.DBName+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatal(err)
	}
	c.MySQLDSN = cfg.FormatDSN()
	db, err := store.Open(ctx, c.DSN(), 4, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		base := testenv.Common(t)
		if a, err := store.Open(ctx, base.DSN(), 1, 5*time.Second); err == nil {
			_, _ = a.ExecContext(ctx, "DROP DATABASE IF EXISTS "+cfg.DBName)
			a.Close()
		}
	})
	return db
}
