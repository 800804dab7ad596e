package sqlgrammar_test

import (
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/migrate"
	"github.com/flashsale-dev/flashsale/schema"
)

// standInCalls are functions whose result stands for these values wherever a
// query is built with them: "directory.function" (a function of that
// package) to the strings it returns.
var standInCalls = map[string][]string{
	// placeholders(n) is "?,?,…,?", n of them (n ≥ 1; callers return early
	// on none).
	"pkg/store.placeholders": {"?", "?,?,?"},
}

// standIns are the other pieces of queries computed at run time, written by
// hand: the key is the package's directory, the function the piece is in and
// the expression as go/types prints it (the test's failure message gives
// the key), the value the strings it stands for. Everything around a
// stand-in is still taken from the code, and a constant that reads as SQL
// (the start of a multi-row INSERT) must be part of a statement sent, so a
// builder's stand-in must begin as its code does. A stand-in no query uses
// any more fails the test, so the table cannot go stale.
func standIns(t *testing.T) map[string][]string {
	t.Helper()
	m := map[string][]string{
		// Multi-row INSERTs: the prefix the builder writes, then a tuple per
		// row, comma-separated; two rows here.
		"pkg/store.TakeStocks: cases.String()": {" WHEN ? THEN ? WHEN ? THEN ?"},
		// An OR of one (item, bucket) row each; two rows here.
		"pkg/store.LockStockRows: where.String()": {"(item_id = ? AND bucket = ?) OR (item_id = ? AND bucket = ?)"},
		"pkg/store.InsertOrdersOf: sb.String()": {
			"INSERT INTO orders (request_id, user_id, item_id, bucket, qty, price_cents, status, expires_at) VALUES " +
				"(?,?,?,?,?,?,'UNPAID',DATE_ADD(NOW(3), INTERVAL ? MICROSECOND))," +
				"(?,?,?,?,?,?,'UNPAID',DATE_ADD(NOW(3), INTERVAL ? MICROSECOND))"},
		"pkg/store.InsertDecisions: sb.String()": {
			"INSERT INTO request_outcomes (request_id, item_id, user_id, qty, outcome, reason) VALUES (?,?,?,?,?,?),(?,?,?,?,?,?)"},
		"pkg/store.CancelExpired: sb.String()": {
			"INSERT INTO stock_restores (order_id, item_id, bucket, qty) VALUES (?,?,?,?),(?,?,?,?)"},

		// Database names spliced into CREATE/DROP DATABASE (each checked
		// against a pattern of [a-z0-9_] or made by the code).
		"bench.RunCompare: w.Settings.BaselineDB":                             {"flashsale_baseline"},
		"bench.drain: cmp.Or(s.DrainDB, drainDB)":                             {"flashsale_drain"},
		"internal/fuzzprep.database: fs.Arg(0)":                               {"flashsale_contract"},
		`internal/testenv.MySQL: fmt.Sprintf("%s_t%s", cfg.DBName, Suffix())`: {"flashsale_t0a1b2c3d"},

		// The columns the runner adds to the released schema_migrations
		// (pkg/migrate addedColumns): all of them, or some.
		`pkg/migrate.ensureTable: strings.Join(add, ", ")`: {
			"ADD COLUMN checksum CHAR(64) CHARACTER SET ascii NULL, ADD COLUMN state VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT 'applied', " +
				"ADD COLUMN last_statement INT NULL, ADD COLUMN last_error VARCHAR(1024) NULL",
			"ADD COLUMN last_error VARCHAR(1024) NULL"},
	}
	// The runner sends the migrations' statements: those of schema/.
	migs, err := migrate.Load(schema.FS)
	if err != nil {
		t.Fatal(err)
	}
	for _, mig := range migs {
		m["pkg/migrate.run: stmt"] = append(m["pkg/migrate.run: stmt"], mig.Statements...)
	}
	return m
}
