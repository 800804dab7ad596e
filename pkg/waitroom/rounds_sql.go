package waitroom

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// ClosedRounds reads item's closed rounds (queue_rounds), in order: round
// 0, 1, ... as far as they have closed. Their Seed is left empty.
func ClosedRounds(ctx context.Context, db store.Querier, item int64) ([]draw.Round, error) {
	rows, err := db.QueryContext(ctx,
		"SELECT n, first_arrival, last_arrival, root FROM queue_rounds WHERE item_id = ? ORDER BY n", item)
	if err != nil {
		return nil, fmt.Errorf("waitroom: rounds of %d: %w", item, err)
	}
	defer rows.Close()
	var out []draw.Round
	for rows.Next() {
		var r draw.Round
		if err := rows.Scan(&r.N, &r.First, &r.Last, &r.Root); err != nil {
			return nil, fmt.Errorf("waitroom: rounds of %d: %w", item, err)
		}
		if r.N != len(out) {
			break // a gap cannot be written (closes go in order); read as far as they run
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("waitroom: rounds of %d: %w", item, err)
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
