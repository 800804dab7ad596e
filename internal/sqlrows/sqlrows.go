// Package sqlrows reads the rows of a query: run it, scan each row, stop at
// the first error, close the rows, report what iteration met.
//
// Every reader of MySQL (pkg/store, the waiting room's, the rebalancer's,
// the audit's and the auditor's queries) wrote that loop out for itself,
// twenty-odd times, each with a chance to forget rows.Err or the Close; it
// is one here. The errors are returned as they are: the caller names what
// it read once, around the call. Libraries that map rows onto structs by
// column name (sqlx, scany) would move the scans into struct tags, so the
// scans stay the callers' own code. It imports nothing of the module, so
// any package may use it.
package sqlrows

import (
	"context"
	"database/sql"
)

// Querier runs a query: *sql.DB, *sql.Tx and *sql.Conn, and pkg/store's
// Querier.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Row is the row a scan reads (*sql.Rows, positioned on it). An alias, so a
// scan written for *sql.Row and *sql.Rows alike (func(interface{ Scan(...any)
// error }) (T, error)) is a List scan as it is.
type Row = interface {
	Scan(dest ...any) error
}

// Each runs query with args on q and calls fn on each row, in order. The
// first error (the query's, fn's, or one iteration met) ends it, and is
// returned. The rows are closed before Each returns, so a transaction may
// run its next statement; a failed Close is reported too.
func Each(ctx context.Context, q Querier, query string, args []any, fn func(Row) error) (err error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// List runs query with args on q and returns scan's value of each row, in
// order (nil for no rows); errors as Each.
func List[T any](ctx context.Context, q Querier, query string, args []any, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	err := Each(ctx, q, query, args, func(r Row) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Value scans a row of one column into a T: List's scan for a list of ids.
func Value[T any](r Row) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}
