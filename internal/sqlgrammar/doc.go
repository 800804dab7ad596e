// Package sqlgrammar holds only a test: every SQL statement flashsale sends
// (the migrations in schema/ and each query the module's Go code passes to
// database/sql) is parsed with a MySQL 8 grammar, Vitess's sqlparser, so a
// statement only MariaDB accepts fails the build's tests although the
// integration tests, which run on MariaDB 10.11, pass. The statements are
// found mechanically: the test type-checks every package of the module and
// follows each query argument of ExecContext, QueryContext, QueryRowContext
// and PrepareContext (and their ctx-less forms) to its string constants; the
// few pieces that are computed at run time have stand-ins written by hand in
// standins_test.go, and a query that can be followed to neither fails the
// test. A parse is not a run: no MySQL 8 server executes these statements.
//
// It has no code outside its tests and nothing imports it. Its tests import
// pkg/migrate and schema, and type-check the module's packages from source
// rather than importing them.
package sqlgrammar
