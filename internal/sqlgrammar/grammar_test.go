package sqlgrammar_test

import (
	"sort"
	"strings"
	"testing"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/schema"
)

// mysqlVersion is the oldest server the statements are written for; the
// grammar uses it for version comments (/*!80016 ... */) only.
const mysqlVersion = "8.0.16" // CHECK constraints are enforced from 8.0.16

func newParser(t *testing.T) *sqlparser.Parser {
	t.Helper()
	p, err := sqlparser.New(sqlparser.Options{MySQLServerVersion: mysqlVersion})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parse parses one statement strictly: Vitess's Parse would accept a DDL
// statement it only half understood (it logs and returns a partial tree),
// which is exactly the MariaDB-only syntax this test is for.
func parse(p *sqlparser.Parser, sql string) error {
	_, err := p.ParseStrictDDL(strings.TrimSuffix(strings.TrimSpace(sql), ";"))
	return err
}

// The grammar rejects what MySQL 8 rejects; the cases are what 0002 used to
// say and what MySQL answered 1064 to.
func TestGrammarRejectsMariaDBOnlySyntax(t *testing.T) {
	p := newParser(t)
	for _, sql := range []string{
		"ALTER TABLE items ADD COLUMN IF NOT EXISTS buckets INT NOT NULL DEFAULT 1",
		"ALTER TABLE items ADD CONSTRAINT IF NOT EXISTS items_buckets_pos CHECK (buckets >= 1)",
		"DELETE FROM orders WHERE id = ? RETURNING id",
		"INSERT INTO orders (id) VALUES (?) RETURNING id",
	} {
		if err := parse(p, sql); err == nil {
			t.Errorf("parsed, but MySQL 8 refuses it: %s", sql)
		}
	}
}

// Every statement of every migration parses.
func TestMigrationsParse(t *testing.T) {
	p := newParser(t)
	migs, err := migrate.Load(schema.FS)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range migs {
		for i, stmt := range m.Statements {
			n++
			if err := parse(p, stmt); err != nil {
				t.Errorf("schema/%s statement %d: %v\n%s", m.File, i+1, err, stmt)
			}
		}
	}
	if n == 0 {
		t.Fatal("no migration statements found")
	}
}

// mustSendSQL are the packages known to send SQL: finding none in one means
// the walk has stopped seeing it.
var mustSendSQL = []string{
	"bench", "internal/fuzzprep", "internal/testenv", "pkg/audit", "pkg/auditor", "pkg/migrate", "pkg/rebalance", "pkg/store",
}

// Every query the module's code passes to database/sql parses, and every
// constant that reads as a statement either parses or is part of one that
// does (the start of a multi-row INSERT a builder completes).
func TestCodeStatementsParse(t *testing.T) {
	p := newParser(t)
	pkgs, _, broken := loadModule(t)
	for _, b := range broken {
		t.Error(b)
	}
	used := map[string]bool{}
	standIns := standIns(t)
	var all, consts []statement
	sends := map[string]int{}
	for _, pc := range pkgs {
		f := &finder{p: pc, standIns: standIns, used: used}
		stmts, unresolved := f.queries()
		for _, u := range unresolved {
			t.Errorf("query not followed to its text: %s", u)
		}
		sends[pc.Rel] += len(stmts)
		all = append(all, stmts...)
		consts = append(consts, f.sqlConstants()...)
	}
	for _, c := range consts {
		if parse(p, c.SQL) != nil && !partOfAny(c.SQL, all) {
			t.Errorf("%s: a constant that reads as SQL neither parses nor is part of a statement sent: %q", c.Site, c.SQL)
		}
	}
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s.SQL] {
			continue
		}
		seen[s.SQL] = true
		if err := parse(p, s.SQL); err != nil {
			t.Errorf("%s: %v\n%s", s.Site, err, s.SQL)
		}
	}
	for _, rel := range mustSendSQL {
		if sends[rel] == 0 {
			t.Errorf("no statement found in %s, which sends SQL: the walk misses its calls", rel)
		}
	}
	var stale []string
	for k := range standIns {
		if !used[k] && len(broken) == 0 { // a package not checked uses none
			stale = append(stale, k)
		}
	}
	for k := range standInCalls {
		if !used[k] && len(broken) == 0 {
			stale = append(stale, k)
		}
	}
	sort.Strings(stale)
	for _, k := range stale {
		t.Errorf("stand-in %q is used by no query any more: remove it", k)
	}
	var pkgsWith []string
	for rel, n := range sends {
		if n > 0 {
			pkgsWith = append(pkgsWith, rel)
		}
	}
	sort.Strings(pkgsWith)
	t.Logf("%d distinct statements parsed, from %s", len(seen), strings.Join(pkgsWith, ", "))
}

func partOfAny(fragment string, stmts []statement) bool {
	for _, s := range stmts {
		if strings.Contains(s.SQL, fragment) {
			return true
		}
	}
	return false
}
