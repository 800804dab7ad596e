package schema

import "embed"

// FS holds the migration files, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
