package migrate

import "errors"

// ErrLocked is returned when another runner held the migration lock too long.
// It is worth waiting for: the other runner finishes.
var ErrLocked = errors.New("migrate: another migration holds the lock")

// ErrHalfApplied is returned when schema_migrations records a migration as
// applying: a run stopped between its first and its last statement. MySQL
// commits each DDL statement on its own, so part of the file took effect; the
// runner refuses to guess which part. The error's message names the migration,
// the statement that failed (when known) and how to repair by hand. Retrying
// does not help.
var ErrHalfApplied = errors.New("migrate: a migration is half applied")

// ErrEdited is returned when the checksum recorded for an applied migration
// differs from the embedded file's: the file was edited after it was
// released, and the database holds the old text's effect. Retrying does not
// help.
var ErrEdited = errors.New("migrate: an applied migration was edited")

// ErrSchemaBehind is returned by RequireCurrent when the database lacks
// migrations the binary was built with. Setup applies them.
var ErrSchemaBehind = errors.New("migrate: schema behind")
