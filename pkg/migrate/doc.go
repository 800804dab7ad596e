// Package migrate applies the embedded schema migrations to MySQL.
//
// It is a deliberately small runner: migrations are applied in file-name order
// under a MySQL named lock (GET_LOCK), so two runners started at once (two
// replicas, a compose job and a test) do not race. Applying twice is a no-op.
//
// MySQL commits every DDL statement on its own, so a migration of several
// statements is not atomic, and MySQL 8 has no ADD COLUMN IF NOT EXISTS to
// make one re-runnable. The runner records instead how far it got, in
// schema_migrations: a version is marked applying before its first statement
// and applied after its last, with the sha256 of its file. On start it
// refuses a version still marked applying (ErrHalfApplied: a run stopped
// midway; the message names the statement and the repair) and a version
// whose recorded checksum differs from its file (ErrEdited), before running
// anything. Rows the released runner wrote (no checksum yet) are adopted:
// they get their file's checksum. A first statement the server refuses ran
// nothing, so that migration is simply not recorded.
//
// RequireCurrent is the deployables' check that setup has run.
//
// It owns the schema_migrations table and the named lock; the migrations
// themselves are schema's, handed in as an fs.FS (schema.FS in production,
// testdata/ in its tests).
//
// Importers: the setup command (Apply), pkg/startup (RequireCurrent), the
// bench tool, internal/fuzzprep and internal/testenv (a fresh database). It
// imports no other package of the module, not even schema, so that the runner
// can be tested on migrations of its own.
package migrate
