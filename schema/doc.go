// Package schema holds flashsale's MySQL migrations as embedded SQL files.
// They are applied in file-name order by pkg/migrate; a file, once released,
// is never edited: add a new one (pkg/migrate records each file's sha256 and
// refuses one edited after it was applied). Every statement is in syntax both
// MySQL 8.0+ and MariaDB 10.11 accept (internal/sqlgrammar parses them).
//
// It owns the SQL files (schema.FS) and nothing else. Importers: the setup
// command, pkg/service (the migration check), the bench tool,
// internal/fuzzprep and internal/testenv. It imports only embed; the runner is
// pkg/migrate, which does not import it, so that the files stay data.
package schema
