package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// Queue is an item's waiting room as stored in item_queues (a row exists iff
// the queue is on). The seed is not in Item: only QueueSeed reads it, so no
// path that shows an item can show the seed by accident.
type Queue struct {
	OpensAt    time.Time
	Commitment string
	Rate       int
}

// queueCols are the item's queue columns as itemCols reads them, from
// itemsFrom's join: NULL for an item without a queue.
const queueCols = "q.opens_at, q.commitment, q.rate, q.shuffle_window_ms, q.round_ms"

// itemsFrom is what itemCols are read from: the item and its queue's row, in
// one join (the primary key on both sides), rather than a subquery per column.
const itemsFrom = "items LEFT JOIN item_queues q ON q.item_id = items.id"

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
		seed, err := draw.NewSeed(nil)
		if err != nil {
			return Queue{}, err
		}
		commitment = seed.Commitment()
		key, err := newGrantKey()
		if err != nil {
			return Queue{}, err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO item_queues (item_id, opens_at, seed, commitment, rate, grant_key, shuffle_window_ms, round_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			it.ID, opens, seed[:], commitment, it.QueueRate, key, it.QueueShuffleWindow.Milliseconds(), it.QueueRound.Milliseconds()); err != nil {
			return Queue{}, fmt.Errorf("store: queue of %d on: %w", it.ID, err)
		}
	case err != nil:
		return Queue{}, fmt.Errorf("store: queue of %d: %w", it.ID, err)
	default:
		if _, err := tx.ExecContext(ctx, "UPDATE item_queues SET opens_at = ?, rate = ?, shuffle_window_ms = ?, round_ms = ? WHERE item_id = ?",
			opens, it.QueueRate, it.QueueShuffleWindow.Milliseconds(), it.QueueRound.Milliseconds(), it.ID); err != nil {
			return Queue{}, fmt.Errorf("store: queue of %d: %w", it.ID, err)
		}
	}
	return Queue{OpensAt: opens, Commitment: commitment, Rate: it.QueueRate}, nil
}

// QueueSeed reads the seed of item id's queue. Only the transcript and the
// shuffle (from starts_at on) may show what it returns. store.ErrNotFound:
// the item has no queue.
func QueueSeed(ctx context.Context, q Querier, id int64) (draw.Seed, error) {
	var b []byte
	err := q.QueryRowContext(ctx, "SELECT seed FROM item_queues WHERE item_id = ?", id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return draw.Seed{}, ErrNotFound
	}
	if err != nil {
		return draw.Seed{}, fmt.Errorf("store: seed of %d: %w", id, err)
	}
	var s draw.Seed
	if len(b) != len(s) {
		return draw.Seed{}, fmt.Errorf("store: seed of %d has %d bytes", id, len(b))
	}
	copy(s[:], b)
	return s, nil
}

// grantKeySize is the length of a queue's grant key: an HMAC-SHA256 key of
// the hash's own size.
const grantKeySize = 32

func newGrantKey() ([]byte, error) {
	k := make([]byte, grantKeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("store: grant key: %w", err)
	}
	return k, nil
}

// QueueGrantKey reads the key item id's admission grants are signed with
// (pkg/waitroom). A queue created before schema 0005 has none yet: the first
// caller draws one and stores it unless another caller did first (the
// UPDATE only fills a NULL), and every caller then reads the one stored.
// store.ErrNotFound: the item has no queue. The key never leaves the
// servers; nothing that shows an item reads it.
func QueueGrantKey(ctx context.Context, q Querier, id int64) ([]byte, error) {
	var b []byte
	err := q.QueryRowContext(ctx, "SELECT grant_key FROM item_queues WHERE item_id = ?", id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: grant key of %d: %w", id, err)
	}
	if len(b) == grantKeySize {
		return b, nil
	}
	k, err := newGrantKey()
	if err != nil {
		return nil, err
	}
	if _, err := q.ExecContext(ctx, "UPDATE item_queues SET grant_key = ? WHERE item_id = ? AND grant_key IS NULL", k, id); err != nil {
		return nil, fmt.Errorf("store: grant key of %d: %w", id, err)
	}
	if err := q.QueryRowContext(ctx, "SELECT grant_key FROM item_queues WHERE item_id = ?", id).Scan(&b); err != nil {
		return nil, fmt.Errorf("store: grant key of %d: %w", id, err)
	}
	if len(b) != grantKeySize {
		return nil, fmt.Errorf("store: grant key of %d has %d bytes", id, len(b))
	}
	return b, nil
}

// LiveQueuedItems lists the items whose queue is on and whose sale has not
// ended by now, by id: the gate's work list.
func LiveQueuedItems(ctx context.Context, q Querier, now time.Time) ([]Item, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+itemCols+" FROM "+itemsFrom+" WHERE q.item_id IS NOT NULL AND items.ends_at > ? ORDER BY items.id", now.UTC())
	if err != nil {
		return nil, fmt.Errorf("store: queued items: %w", err)
	}
	defer rows.Close()
	var out []Item
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("store: queued items: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: queued items: %w", err)
	}
	return out, nil
}
