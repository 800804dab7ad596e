// Package schema holds flashsale's MySQL migrations as embedded SQL files.
// They are applied in file-name order by pkg/migrate; a file, once released,
// is never edited: add a new one (pkg/migrate records each file's sha256 and
// refuses one edited after it was applied). Every statement is in syntax both
// MySQL 8.0+ and MariaDB 10.11 accept (internal/sqlgrammar parses them).
package schema

import "embed"

// FS holds the migration files, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
