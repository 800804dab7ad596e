package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"strings"
)

// RequireCurrent returns nil when db has every migration of fsys applied,
// and otherwise an error wrapping ErrSchemaBehind that names the versions
// missing or half applied and says to run setup. A deployable calls it at
// start with the schema it was built with, so a binary ahead of its database
// stops with that message instead of failing on its first query. A recorded
// checksum that differs from the file is ErrEdited; rows that predate
// checksums count as applied (setup adopts them). It reads only: no lock,
// no table created.
func RequireCurrent(ctx context.Context, db *sql.DB, fsys fs.FS) error {
	migs, err := Load(fsys)
	if err != nil {
		return err
	}
	recs, err := readRecords(ctx, db, false)
	if err != nil {
		return err
	}
	var behind []string
	for _, m := range migs {
		r, ok := recs[m.Version]
		switch {
		case !ok:
			behind = append(behind, m.Version+" not applied")
		case r.state != stateApplied:
			behind = append(behind, m.Version+" half applied")
		case r.checksum.Valid && r.checksum.String != m.Checksum:
			return edited(m, r.checksum.String)
		}
	}
	if len(behind) > 0 {
		return fmt.Errorf("%w: %s; run setup (go run ./setup, or the setup Job)", ErrSchemaBehind, strings.Join(behind, ", "))
	}
	return nil
}
