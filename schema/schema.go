// Package schema holds flashsale's MySQL migrations as embedded SQL files.
// They are applied in file-name order by pkg/migrate; a file, once released,
// is never edited: add a new one.
package schema

import "embed"

// FS holds the migration files, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
