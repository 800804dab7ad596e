package sqlgrammar_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// walkSample is a package as the walk sees one: queries it follows to their
// text, one it cannot follow, and a MariaDB-only statement.
const walkSample = `package sample

import (
	"context"
	"database/sql"
	"fmt"
)

const cols = "id, name"

func queries(ctx context.Context, db *sql.DB, tx *sql.Tx, table string, lock bool) {
	db.QueryRowContext(ctx, "SELECT "+cols+" FROM items WHERE id = ?", 1)
	q := "SELECT id FROM items"
	if lock {
		q += " FOR UPDATE"
	}
	tx.QueryContext(ctx, q)
	for _, s := range []string{"DELETE FROM items WHERE id = 1", "DELETE FROM orders WHERE id = 1 RETURNING id"} {
		tx.ExecContext(ctx, s)
	}
	exec(ctx, db, "UPDATE items SET name = ? WHERE id = ?")
	db.ExecContext(ctx, fmt.Sprintf("DROP TABLE %s", table))
}

func exec(ctx context.Context, db *sql.DB, query string) { db.ExecContext(ctx, query) }
`

// The walk follows constants, concatenations, +=, ranges over literal lists
// and a helper's parameter to its callers' arguments; it reports what it
// cannot follow; and the MariaDB-only statement is found and refused.
func TestWalkFollowsQueries(t *testing.T) {
	_, lookup, _ := loadModule(t)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "sample.go", walkSample, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := checkPackage("sample", "sample", fset, []*ast.File{f}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	fd := &finder{p: pc, standIns: map[string][]string{}, used: map[string]bool{}}
	stmts, unresolved := fd.queries()
	got := map[string]bool{}
	for _, s := range stmts {
		got[s.SQL] = true
	}
	for _, want := range []string{
		"SELECT id, name FROM items WHERE id = ?",
		"SELECT id FROM items", "SELECT id FROM items FOR UPDATE",
		"DELETE FROM items WHERE id = 1", "DELETE FROM orders WHERE id = 1 RETURNING id",
		"UPDATE items SET name = ? WHERE id = ?",
	} {
		if !got[want] {
			t.Errorf("walk did not find %q; found %v", want, stmts)
		}
	}
	if len(stmts) != 6 {
		t.Errorf("found %d statements, want 6: %v", len(stmts), stmts)
	}
	if len(unresolved) != 1 || !strings.Contains(unresolved[0], `key "sample.queries: fmt.Sprintf(`) {
		t.Errorf("unresolved %q, want the Sprintf's with its stand-in key", unresolved)
	}
	p := newParser(t)
	for s := range got {
		if err := parse(p, s); (err != nil) != strings.Contains(s, "RETURNING") {
			t.Errorf("%q: parse error %v", s, err)
		}
	}
}
