package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/waitroom"
)

// Queue is an item's waiting room as stored in item_queues (a row exists iff
// the queue is on). The seed is not in Item: only QueueSeed reads it, so no
// path that shows an item can show the seed by accident.
type Queue struct {
	OpensAt    time.Time
	Commitment string
}

// queueCols are the item's queue columns as itemCols reads them: NULL for an
// item without a queue.
const queueCols = "(SELECT q.opens_at FROM item_queues q WHERE q.item_id = items.id)," +
	" (SELECT q.commitment FROM item_queues q WHERE q.item_id = items.id)"

// saveQueue makes item it's item_queues row what it asks, inside tx (the
// item's row is locked by the caller): inserted with a new seed when the
// queue is turned on, its opens_at updated when it stays on (the seed, and so
// the commitment, never change while the row exists), deleted when it is
// turned off. It returns the queue as stored (zero when off).
func saveQueue(ctx context.Context, tx *sql.Tx, it Item) (Queue, error) {
	if !it.Queue {
		if _, err := tx.ExecContext(ctx, "DELETE FROM item_queues WHERE item_id = ?", it.ID); err != nil {
			return Queue{}, fmt.Errorf("store: queue of %d off: %w", it.ID, err)
		}
		return Queue{}, nil
	}
	opens := it.QueueOpensAt.UTC().Truncate(time.Millisecond)
	var commitment string
	err := tx.QueryRowContext(ctx, "SELECT commitment FROM item_queues WHERE item_id = ?", it.ID).Scan(&commitment)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		seed, err := waitroom.NewSeed(nil)
		if err != nil {
			return Queue{}, err
		}
		commitment = seed.Commitment()
		if _, err := tx.ExecContext(ctx, "INSERT INTO item_queues (item_id, opens_at, seed, commitment) VALUES (?, ?, ?, ?)",
			it.ID, opens, seed[:], commitment); err != nil {
			return Queue{}, fmt.Errorf("store: queue of %d on: %w", it.ID, err)
		}
	case err != nil:
		return Queue{}, fmt.Errorf("store: queue of %d: %w", it.ID, err)
	default:
		if _, err := tx.ExecContext(ctx, "UPDATE item_queues SET opens_at = ? WHERE item_id = ?", opens, it.ID); err != nil {
			return Queue{}, fmt.Errorf("store: queue of %d: %w", it.ID, err)
		}
	}
	return Queue{OpensAt: opens, Commitment: commitment}, nil
}

// QueueSeed reads the seed of item id's queue. Only the transcript and the
// shuffle (from starts_at on) may show what it returns. store.ErrNotFound:
// the item has no queue.
func QueueSeed(ctx context.Context, q Querier, id int64) (waitroom.Seed, error) {
	var b []byte
	err := q.QueryRowContext(ctx, "SELECT seed FROM item_queues WHERE item_id = ?", id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return waitroom.Seed{}, ErrNotFound
	}
	if err != nil {
		return waitroom.Seed{}, fmt.Errorf("store: seed of %d: %w", id, err)
	}
	var s waitroom.Seed
	if len(b) != len(s) {
		return waitroom.Seed{}, fmt.Errorf("store: seed of %d has %d bytes", id, len(b))
	}
	copy(s[:], b)
	return s, nil
}
