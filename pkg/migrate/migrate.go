// Package migrate applies the embedded schema migrations to MySQL.
//
// It is a deliberately small runner: migrations are applied in file-name order,
// each recorded in schema_migrations, under a MySQL named lock (GET_LOCK) so two
// runners started at once (two replicas, a compose job and a test) do not race.
// Applying twice is a no-op.
package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
)

const lockName = "flashsale.migrate"

// statementSeparator splits a migration file into statements, because the
// driver is used without multiStatements.
const statementSeparator = "-- +statement"

// ErrLocked is returned when another runner held the migration lock too long.
var ErrLocked = errors.New("migrate: another migration holds the lock")

// Migration is one file's worth of statements.
type Migration struct {
	Version    string
	Statements []string
}

// Load reads the *.sql files of fsys in name order.
func Load(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("migrate: list: %w", err)
	}
	sort.Strings(names)
	var out []Migration
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("migrate: read %s: %w", name, err)
		}
		m := Migration{Version: strings.TrimSuffix(name, ".sql")}
		for _, s := range strings.Split(string(b), statementSeparator) {
			if strings.TrimSpace(stripComments(s)) != "" {
				m.Statements = append(m.Statements, s)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// Apply applies every migration of fsys not yet recorded in db and returns the
// versions it applied.
func Apply(ctx context.Context, db *sql.DB, fsys fs.FS, log *slog.Logger) ([]string, error) {
	migs, err := Load(fsys)
	if err != nil {
		return nil, err
	}
	// A named lock belongs to a session, so hold one connection throughout.
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", lockName).Scan(&got); err != nil {
		return nil, fmt.Errorf("migrate: lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, ErrLocked
	}
	defer func() {
		// Released on a fresh context: the caller's may be done already.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", lockName)
	}()

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    VARCHAR(128) NOT NULL PRIMARY KEY,
  applied_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	done := map[string]bool{}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("migrate: scan: %w", err)
		}
		done[v] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("migrate: read schema_migrations: %w", err)
	}

	var applied []string
	for _, m := range migs {
		if done[m.Version] {
			continue
		}
		// MySQL commits DDL implicitly, so a migration is not atomic; every
		// statement is written to be re-runnable (IF NOT EXISTS) instead.
		for i, stmt := range m.Statements {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return applied, fmt.Errorf("migrate: %s statement %d: %w", m.Version, i+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version) VALUES (?)", m.Version); err != nil {
			return applied, fmt.Errorf("migrate: record %s: %w", m.Version, err)
		}
		log.Info("migration applied", "version", m.Version)
		applied = append(applied, m.Version)
	}
	return applied, nil
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
