package migrate

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"

	"github.com/go-sql-driver/mysql"
)

const lockName = "flashsale.migrate"

// statementSeparator splits a migration file into statements, because the
// driver is used without multiStatements.
const statementSeparator = "-- +statement"

// Migration is one file's worth of statements.
type Migration struct {
	Version    string   // the file name without .sql, as recorded in schema_migrations
	File       string   // the file name in its fs.FS
	Checksum   string   // hex sha256 of the file
	Statements []string // in file order, comments kept
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
		sum := sha256.Sum256(b)
		m := Migration{Version: strings.TrimSuffix(name, ".sql"), File: name, Checksum: hex.EncodeToString(sum[:])}
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
// versions it applied. It refuses, before running anything, a migration
// recorded as half applied (ErrHalfApplied) or edited since it was applied
// (ErrEdited); neither goes away by retrying.
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

	if err := ensureTable(ctx, conn); err != nil {
		return nil, err
	}
	recs, err := readRecords(ctx, conn, true)
	if err != nil {
		return nil, err
	}
	var adopt []Migration
	for _, m := range migs {
		r, ok := recs[m.Version]
		switch {
		case !ok:
		case r.state == stateApplying:
			return nil, halfApplied(m, r)
		case !r.checksum.Valid:
			adopt = append(adopt, m)
		case r.checksum.String != m.Checksum:
			return nil, edited(m, r.checksum.String)
		}
	}
	for _, m := range adopt {
		// The released runner recorded no checksum. Its files are today's,
		// except 0002_stock_buckets, rewritten without MariaDB's ADD COLUMN IF
		// NOT EXISTS to the same effect, so the file's checksum is the right one.
		if _, err := conn.ExecContext(ctx, "UPDATE schema_migrations SET checksum = ? WHERE version = ? AND checksum IS NULL", m.Checksum, m.Version); err != nil {
			return nil, fmt.Errorf("migrate: adopt %s: %w", m.Version, err)
		}
		log.Info("migration adopted: checksum recorded", "version", m.Version)
	}

	var applied []string
	for _, m := range migs {
		if _, ok := recs[m.Version]; ok {
			continue
		}
		if err := run(ctx, conn, m); err != nil {
			return applied, err
		}
		log.Info("migration applied", "version", m.Version)
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// run applies one migration, recording it as applying, the statement it is
// in, the server's error if one fails, and applied at the end.
func run(ctx context.Context, conn *sql.Conn, m Migration) error {
	if _, err := conn.ExecContext(ctx, "INSERT INTO schema_migrations (version, checksum, state, last_statement) VALUES (?, ?, ?, 0)",
		m.Version, m.Checksum, stateApplying); err != nil {
		return fmt.Errorf("migrate: record %s: %w", m.Version, err)
	}
	for i, stmt := range m.Statements {
		if _, err := conn.ExecContext(ctx, "UPDATE schema_migrations SET last_statement = ? WHERE version = ?", i+1, m.Version); err != nil {
			return fmt.Errorf("migrate: record %s statement %d: %w", m.Version, i+1, err)
		}
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return failed(ctx, conn, m, i, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "UPDATE schema_migrations SET state = ?, applied_at = CURRENT_TIMESTAMP(3), last_error = NULL WHERE version = ?",
		stateApplied, m.Version); err != nil {
		return fmt.Errorf("migrate: record %s applied: %w", m.Version, err)
	}
	return nil
}

// failed records statement i's error and returns it. A first statement the
// server answered with an error ran nothing (a refused statement has no
// effect), so its record is removed and a fixed file runs whole next time;
// any later failure leaves the migration half applied.
func failed(ctx context.Context, conn *sql.Conn, m Migration, i int, err error) error {
	// On a fresh context: the caller's may be what ended the statement.
	wctx := context.WithoutCancel(ctx)
	var me *mysql.MySQLError
	if i == 0 && errors.As(err, &me) {
		if _, derr := conn.ExecContext(wctx, "DELETE FROM schema_migrations WHERE version = ? AND state = ?", m.Version, stateApplying); derr == nil {
			return fmt.Errorf("migrate: %s statement 1 of %d (nothing of it ran): %w", m.File, len(m.Statements), err)
		}
	}
	msg := err.Error()
	if len(msg) > maxErrorLen {
		// Cut on a character boundary: a broken UTF-8 sequence would make
		// the server refuse the UPDATE, and the error would be lost.
		msg = strings.ToValidUTF8(msg[:maxErrorLen], "")
	}
	_, _ = conn.ExecContext(wctx, "UPDATE schema_migrations SET last_error = ? WHERE version = ?", msg, m.Version)
	return fmt.Errorf("migrate: %s statement %d of %d: %w (the migration is now half applied: the next run refuses it and says how to repair)",
		m.File, i+1, len(m.Statements), err)
}

func halfApplied(m Migration, r record) error {
	n := len(m.Statements)
	var where string
	switch {
	case r.lastStatement <= 0:
		where = "a run stopped before its first statement, so none of it ran"
	case r.lastError.Valid:
		where = fmt.Sprintf("statement %d of %d (%s) failed with: %s", r.lastStatement, n, firstLine(m, r.lastStatement), r.lastError.String)
	default:
		where = fmt.Sprintf("a run stopped (killed or disconnected) in statement %d of %d (%s), which may or may not have taken effect",
			r.lastStatement, n, firstLine(m, r.lastStatement))
	}
	ran := "no statement before it ran"
	switch {
	case r.lastStatement == 2:
		ran = "statement 1 ran"
	case r.lastStatement > 2:
		ran = fmt.Sprintf("statements 1-%d ran", r.lastStatement-1)
	}
	return fmt.Errorf("%w: %s: %s; %s. MySQL commits each DDL statement on its own, so nothing was rolled back. "+
		"Repair by hand, then run setup again: either finish it (run the rest of %s from statement %d on, skipping what already took effect, "+
		"then UPDATE schema_migrations SET state = 'applied', last_error = NULL WHERE version = '%s'), "+
		"or undo what ran and DELETE FROM schema_migrations WHERE version = '%s' so the next run applies the whole file",
		ErrHalfApplied, m.File, where, ran, m.File, max(r.lastStatement, 1), m.Version, m.Version)
}

func edited(m Migration, recorded string) error {
	return fmt.Errorf("%w: %s was edited after it was applied (schema_migrations has sha256 %s, the file %s): "+
		"a released migration is never edited; restore its text and put the change in a new migration "+
		"(if the database is known to match the new text: UPDATE schema_migrations SET checksum = '%s' WHERE version = '%s')",
		ErrEdited, m.File, recorded, m.Checksum, m.Checksum, m.Version)
}

// firstLine is statement n's (1-based) first line that is not a comment.
func firstLine(m Migration, n int) string {
	if n < 1 || n > len(m.Statements) {
		return "not in the file"
	}
	for _, line := range strings.Split(m.Statements[n-1], "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "--") {
			return l
		}
	}
	return ""
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
