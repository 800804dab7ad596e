package sqlrows

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"slices"
	"testing"
)

// fakeDriver answers every query with the int64s of its conn's values, then
// the conn's iteration error (io.EOF: none), and counts the rows closed.
type fakeDriver struct{ c *fakeConn }

func (d fakeDriver) Open(string) (driver.Conn, error) { return d.c, nil }

type fakeConn struct {
	values  []int64
	iterErr error
	closed  int
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not supported") }
func (c *fakeConn) Close() error                        { return nil }
func (c *fakeConn) Begin() (driver.Tx, error)           { return nil, errors.New("not supported") }

func (c *fakeConn) QueryContext(_ context.Context, query string, _ []driver.NamedValue) (driver.Rows, error) {
	if query == "bad" {
		return nil, errBadQuery
	}
	return &fakeRows{c: c, values: c.values}, nil
}

type fakeRows struct {
	c      *fakeConn
	values []int64
}

func (r *fakeRows) Columns() []string { return []string{"v"} }
func (r *fakeRows) Close() error      { r.c.closed++; return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if len(r.values) == 0 {
		if r.c.iterErr != nil {
			return r.c.iterErr
		}
		return io.EOF
	}
	dest[0], r.values = r.values[0], r.values[1:]
	return nil
}

var errBadQuery = errors.New("bad query")

func open(t *testing.T, c *fakeConn) *sql.DB {
	t.Helper()
	name := "sqlrows-fake-" + t.Name()
	sql.Register(name, fakeDriver{c})
	db, err := sql.Open(name, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// List returns every row in order, and nil for none.
func TestListReadsEveryRowInOrder(t *testing.T) {
	ctx := context.Background()
	c := &fakeConn{values: []int64{3, 1, 2}}
	db := open(t, c)
	got, err := List(ctx, db, "q", nil, Value[int64])
	if err != nil || !slices.Equal(got, []int64{3, 1, 2}) {
		t.Fatalf("List = %v, %v; want [3 1 2]", got, err)
	}
	c.values = nil
	if got, err := List(ctx, db, "q", nil, Value[int64]); err != nil || got != nil {
		t.Fatalf("List of no rows = %#v, %v; want nil", got, err)
	}
	if c.closed != 2 {
		t.Fatalf("%d rows closed, want 2", c.closed)
	}
}

// The first error ends the read and is returned as it is, the rows closed:
// the query's, the scan's, and the one iteration met after the last row.
func TestEachStopsAtTheFirstErrorAndCloses(t *testing.T) {
	ctx := context.Background()
	c := &fakeConn{values: []int64{1, 2, 3}}
	db := open(t, c)
	if err := Each(ctx, db, "bad", nil, func(Row) error { return nil }); !errors.Is(err, errBadQuery) {
		t.Fatalf("query error: %v, want %v", err, errBadQuery)
	}
	stop := errors.New("stop")
	var seen []int64
	err := Each(ctx, db, "q", nil, func(r Row) error {
		v, err := Value[int64](r)
		if err != nil {
			return err
		}
		seen = append(seen, v)
		if v == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !slices.Equal(seen, []int64{1, 2}) || c.closed != 1 {
		t.Fatalf("Each = %v after %v, %d closed; want stop after [1 2], rows closed", err, seen, c.closed)
	}
	broken := errors.New("connection lost")
	c.iterErr = broken
	if got, err := List(ctx, db, "q", nil, Value[int64]); !errors.Is(err, broken) || got != nil {
		t.Fatalf("List with an iteration error = %v, %v; want nil, %v", got, err, broken)
	}
}
