package waitroom

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/internal/rowcache"
	"github.com/flashsale-dev/flashsale/internal/sqlrows"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Item is the waiting room's view of an item: what its rules read of the
// item's row (its sale window and bucket count) and of its item_queues row
// (queue_sql.go). Queue is true when the item has a waiting room;
// QueueOpensAt is when buyers may take tickets and QueueCommitment
// hex(sha256(seed)); QueueRate is how many tickets a second the gate
// admits. QueueShuffleWindow is how long after starts_at arrivals are still
// drawn, in rounds of QueueRound (docs/fairness.md); 0: only the tickets
// taken before the start are. All are zero without a queue.
type Item struct {
	ID       int64
	StartsAt time.Time
	EndsAt   time.Time
	// Buckets is the item's bucket count (1: unbucketed).
	Buckets int

	// ItemQueue is the item_queues row's settings, read and scanned as
	// pkg/store reads them for store.Item (store.QueueRow).
	store.ItemQueue
}

// Bucketed reports whether the item's stock is spread over buckets.
func (it Item) Bucketed() bool { return it.Buckets > 1 }

// ErrNoItem: no such item.
var ErrNoItem = errors.New("waitroom: no such item")

// itemCols are Item's columns, read from the item and its queue's row in
// one join (the primary key on both sides): NULL queue columns for an item
// without a queue (store.QueueCols, store.ItemsFrom).
const (
	itemCols  = "items.id, items.starts_at, items.ends_at, items.buckets, " + store.QueueCols
	itemsFrom = store.ItemsFrom
)

func scanItem(row interface{ Scan(...any) error }) (Item, error) {
	var it Item
	var q store.QueueRow
	if err := row.Scan(append([]any{&it.ID, &it.StartsAt, &it.EndsAt, &it.Buckets}, q.Dest()...)...); err != nil {
		return Item{}, err
	}
	it.ItemQueue = q.Queue()
	return it, nil
}

// ReadItem reads item id's view from MySQL. store.ErrNotFound: no such
// item.
func ReadItem(ctx context.Context, q store.Querier, id int64) (Item, error) {
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemCols+" FROM "+itemsFrom+" WHERE items.id = ?", id))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Item{}, store.ErrNotFound
	case err != nil:
		return Item{}, fmt.Errorf("waitroom: item %d: %w", id, err)
	}
	return it, nil
}

// LiveQueuedItems lists the items whose queue is on and whose sale has not
// ended by now, by id: the gate's work list.
func LiveQueuedItems(ctx context.Context, q store.Querier, now time.Time) ([]Item, error) {
	out, err := sqlrows.List(ctx, q, "SELECT "+itemCols+" FROM "+itemsFrom+" WHERE q.item_id IS NOT NULL AND items.ends_at > ? ORDER BY items.id", []any{now.UTC()}, scanItem)
	if err != nil {
		return nil, fmt.Errorf("waitroom: queued items: %w", err)
	}
	return out, nil
}

// itemTTL is how long the Room keeps an item's view, as long as the
// ingress's own item cache keeps the item: an admin write on this replica
// is seen at once (ForgetItem), one on another after at most this.
const itemTTL = time.Second

func newItemViews() *rowcache.Cache[Item] { return rowcache.New[Item](itemTTL, store.ErrNotFound) }

// Item is item id as the waiting room sees it, from this replica's cache
// (a second's TTL, one MySQL read per item shared by concurrent callers,
// unknown ids remembered too): ErrNoItem for an unknown item,
// ErrUnavailable when MySQL does not answer within the store timeout.
func (r *Room) Item(ctx context.Context, id int64) (Item, error) {
	it, err := r.items.Load(ctx, id, func(ctx context.Context) (Item, error) {
		dctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
		defer cancel()
		return ReadItem(dctx, r.db, id)
	})
	switch {
	case err == nil:
		return it, nil
	case errors.Is(err, store.ErrNotFound):
		return Item{}, ErrNoItem
	case !errors.Is(err, rowcache.ErrLeft):
		r.log.WarnContext(ctx, "item: mysql unavailable", "err", err)
	}
	return Item{}, fmt.Errorf("item %d: %w", id, ErrUnavailable)
}

// ForgetItem drops this replica's view of item id: an admin just wrote it.
func (r *Room) ForgetItem(id int64) { r.items.Forget(id) }
