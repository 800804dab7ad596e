package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// States of a schema_migrations row.
const (
	stateApplying = "applying" // its first statement may have run, its last has not
	stateApplied  = "applied"
)

// maxErrorLen bounds last_error (VARCHAR(1024)).
const maxErrorLen = 1000

// record is one schema_migrations row.
type record struct {
	checksum      sql.NullString // NULL: written by the released runner, not yet adopted
	state         string
	lastStatement int // 1-based statement last started; 0 none
	lastError     sql.NullString
}

type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// addedColumns are schema_migrations' columns the released runner's table
// lacks, in the order they are added. The released rows were all applied.
var addedColumns = []struct{ name, def string }{
	{"checksum", "checksum CHAR(64) CHARACTER SET ascii NULL"},
	{"state", "state VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT 'applied'"},
	{"last_statement", "last_statement INT NULL"},
	{"last_error", "last_error VARCHAR(1024) NULL"},
}

// ensureTable creates schema_migrations, or adds to the released runner's
// table the columns it lacks. MySQL 8 has no ADD COLUMN IF NOT EXISTS, so the
// columns present are read from information_schema first; the caller holds
// the lock, so no other runner adds them meanwhile.
func ensureTable(ctx context.Context, q querier) error {
	if _, err := q.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
  version        VARCHAR(128) NOT NULL PRIMARY KEY,
  applied_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  checksum       CHAR(64)     CHARACTER SET ascii NULL,
  state          VARCHAR(16)  CHARACTER SET ascii NOT NULL DEFAULT 'applied',
  last_statement INT          NULL,
  last_error     VARCHAR(1024) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`); err != nil {
		return fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	have, err := columns(ctx, q)
	if err != nil {
		return err
	}
	var add []string
	for _, c := range addedColumns {
		if !have[c.name] {
			add = append(add, "ADD COLUMN "+c.def)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if _, err := q.ExecContext(ctx, "ALTER TABLE schema_migrations "+strings.Join(add, ", ")); err != nil {
		return fmt.Errorf("migrate: add columns to schema_migrations: %w", err)
	}
	return nil
}

// columns returns the names of schema_migrations' columns; none when the
// table does not exist.
func columns(ctx context.Context, q querier) (map[string]bool, error) {
	rows, err := q.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'schema_migrations'")
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations columns: %w", err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return nil, fmt.Errorf("migrate: read schema_migrations columns: %w", err)
		}
		have[strings.ToLower(c)] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations columns: %w", err)
	}
	return have, nil
}

// readRecords reads schema_migrations by version. With current false, a
// table the released runner made (version and applied_at only) is read as
// all applied, unadopted, and a missing table as no rows.
func readRecords(ctx context.Context, q querier, current bool) (map[string]record, error) {
	query := "SELECT version, checksum, state, COALESCE(last_statement, 0), last_error FROM schema_migrations"
	if !current {
		have, err := columns(ctx, q)
		if err != nil {
			return nil, err
		}
		if len(have) == 0 {
			return map[string]record{}, nil
		}
		if !have["state"] {
			query = "SELECT version, NULL, 'applied', 0, NULL FROM schema_migrations"
		}
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		var me *mysql.MySQLError
		if !current && errors.As(err, &me) && me.Number == 1146 { // dropped meanwhile
			return map[string]record{}, nil
		}
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	out := map[string]record{}
	for rows.Next() {
		var v string
		var r record
		if err := rows.Scan(&v, &r.checksum, &r.state, &r.lastStatement, &r.lastError); err != nil {
			rows.Close()
			return nil, fmt.Errorf("migrate: scan schema_migrations: %w", err)
		}
		out[v] = r
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	return out, nil
}
