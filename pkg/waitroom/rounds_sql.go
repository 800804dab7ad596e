package waitroom

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// ClosedRounds reads item's closed rounds (queue_rounds), in order: round
// 0, 1, ... as far as they have closed. Their Seed is left empty.
func ClosedRounds(ctx context.Context, db store.Querier, item int64) ([]draw.Round, error) {
	out, err := sqlrows.List(ctx, db, "SELECT n, first_arrival, last_arrival, root FROM queue_rounds WHERE item_id = ? ORDER BY n", []any{item},
		func(row sqlrows.Row) (draw.Round, error) {
			var r draw.Round
			err := row.Scan(&r.N, &r.First, &r.Last, &r.Root)
			return r, err
		})
	if err != nil {
		return nil, fmt.Errorf("waitroom: rounds of %d: %w", item, err)
	}
	for i, r := range out {
		if r.N != i {
			return out[:i], nil // a gap cannot be written (closes go in order); read as far as they run
		}
	}
	return out, nil
}

// saveRound writes closed round r of item once: a second writer (another
// gate holder, or a pass that ran twice) computes the same round from the
// same final tickets, so the first row stands.
func saveRound(ctx context.Context, db store.Querier, item int64, r draw.Round) error {
	if _, err := db.ExecContext(ctx,
		"INSERT IGNORE INTO queue_rounds (item_id, n, first_arrival, last_arrival, root) VALUES (?, ?, ?, ?, ?)",
		item, r.N, r.First, r.Last, r.Root); err != nil {
		return fmt.Errorf("waitroom: close round %d of %d: %w", r.N, item, err)
	}
	return nil
}
