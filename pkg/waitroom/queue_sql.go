package waitroom

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// The waiting room's rows: item_queues (one per item with a queue: its
// opening, pace and shuffle window, its seed and its grant key) is this
// package's table, and these are its statements. The item's own row is
// pkg/store's; store.Item still carries the queue's settings
// (store.ItemQueue, as Item does), read by pkg/store's join (store.ItemsFrom,
// store.QueueRow), for the catalog and the audit.

// SaveQueue makes item it's item_queues row what it asks, inside tx, after
// store.UpsertItem wrote the item's row (and while it holds its lock):
// inserted with a new seed when the queue is turned on, its opens_at, rate
// and rounds updated when it stays on (the seed, and so the commitment,
// never change while the row exists), deleted when it is turned off. It
// sets it's queue fields to what is stored: a queue that stays on keeps its
// commitment.
func SaveQueue(ctx context.Context, tx *sql.Tx, it *store.Item) error {
	q, err := saveQueue(ctx, tx, *it)
	if err != nil {
		return err
	}
	it.QueueOpensAt, it.QueueCommitment, it.QueueRate = q.opensAt, q.commitment, q.rate
	return nil
}

// savedQueue is an item_queues row as saveQueue left it.
type savedQueue struct {
	opensAt    time.Time
	commitment string
	rate       int
}

func saveQueue(ctx context.Context, tx *sql.Tx, it store.Item) (savedQueue, error) {
	if !it.Queue {
		if _, err := tx.ExecContext(ctx, "DELETE FROM item_queues WHERE item_id = ?", it.ID); err != nil {
			return savedQueue{}, fmt.Errorf("waitroom: queue of %d off: %w", it.ID, err)
		}
		return savedQueue{}, nil
	}
	opens := it.QueueOpensAt.UTC().Truncate(time.Millisecond)
	var commitment string
	err := tx.QueryRowContext(ctx, "SELECT commitment FROM item_queues WHERE item_id = ?", it.ID).Scan(&commitment)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		seed, err := draw.NewSeed(nil)
		if err != nil {
			return savedQueue{}, err
		}
		commitment = seed.Commitment()
		key, err := newGrantKey()
		if err != nil {
			return savedQueue{}, err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO item_queues (item_id, opens_at, seed, commitment, rate, grant_key, shuffle_window_ms, round_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			it.ID, opens, seed[:], commitment, it.QueueRate, key, it.QueueShuffleWindow.Milliseconds(), it.QueueRound.Milliseconds()); err != nil {
			return savedQueue{}, fmt.Errorf("waitroom: queue of %d on: %w", it.ID, err)
		}
	case err != nil:
		return savedQueue{}, fmt.Errorf("waitroom: queue of %d: %w", it.ID, err)
	default:
		if _, err := tx.ExecContext(ctx, "UPDATE item_queues SET opens_at = ?, rate = ?, shuffle_window_ms = ?, round_ms = ? WHERE item_id = ?",
			opens, it.QueueRate, it.QueueShuffleWindow.Milliseconds(), it.QueueRound.Milliseconds(), it.ID); err != nil {
			return savedQueue{}, fmt.Errorf("waitroom: queue of %d: %w", it.ID, err)
		}
	}
	return savedQueue{opensAt: opens, commitment: commitment, rate: it.QueueRate}, nil
}

// QueueSeed reads the seed of item id's queue. Only the transcript and the
// shuffle (from starts_at on) may show what it returns. store.ErrNotFound:
// the item has no queue.
func QueueSeed(ctx context.Context, q store.Querier, id int64) (draw.Seed, error) {
	var b []byte
	err := q.QueryRowContext(ctx, "SELECT seed FROM item_queues WHERE item_id = ?", id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return draw.Seed{}, store.ErrNotFound
	}
	if err != nil {
		return draw.Seed{}, fmt.Errorf("waitroom: seed of %d: %w", id, err)
	}
	var s draw.Seed
	if len(b) != len(s) {
		return draw.Seed{}, fmt.Errorf("waitroom: seed of %d has %d bytes", id, len(b))
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
		return nil, fmt.Errorf("waitroom: grant key: %w", err)
	}
	return k, nil
}

// QueueGrantKey reads the key item id's admission grants are signed with
// (grant.go). A queue created before schema 0005 has none yet: the first
// caller draws one and stores it unless another caller did first (the
// UPDATE only fills a NULL), and every caller then reads the one stored.
// store.ErrNotFound: the item has no queue. The key never leaves the
// servers; nothing that shows an item reads it.
func QueueGrantKey(ctx context.Context, q store.Querier, id int64) ([]byte, error) {
	var b []byte
	err := q.QueryRowContext(ctx, "SELECT grant_key FROM item_queues WHERE item_id = ?", id).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("waitroom: grant key of %d: %w", id, err)
	}
	if len(b) == grantKeySize {
		return b, nil
	}
	k, err := newGrantKey()
	if err != nil {
		return nil, err
	}
	if _, err := q.ExecContext(ctx, "UPDATE item_queues SET grant_key = ? WHERE item_id = ? AND grant_key IS NULL", k, id); err != nil {
		return nil, fmt.Errorf("waitroom: grant key of %d: %w", id, err)
	}
	if err := q.QueryRowContext(ctx, "SELECT grant_key FROM item_queues WHERE item_id = ?", id).Scan(&b); err != nil {
		return nil, fmt.Errorf("waitroom: grant key of %d: %w", id, err)
	}
	if len(b) != grantKeySize {
		return nil, fmt.Errorf("waitroom: grant key of %d has %d bytes", id, len(b))
	}
	return b, nil
}
