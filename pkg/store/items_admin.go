package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// ItemChange is what UpsertItem did, so the caller knows how much of the
// Redis state to rebuild.
type ItemChange struct {
	Item Item
	// Created is true for a new item.
	Created bool
	// StockChanged is true when total stock was set (new item, or changed
	// before any order existed).
	StockChanged bool
	// BucketsChanged is true when the item's stock was laid out over a new
	// bucket count; PrevBuckets is the count before.
	BucketsChanged bool
	PrevBuckets    int
}

// ErrTransfersOpen is returned when an item's buckets may not be laid out
// anew because a transfer between them is not finished.
var ErrTransfersOpen = errors.New("store: transfers between buckets not finished")

// UpsertItem creates item it or updates it inside tx, holding the row lock.
// it.TotalStock is the requested total stock and it.Buckets the bucket count
// (0 keeps the current one; a new item gets 1); on a new item (or an item
// without orders) Stock becomes that total. Changing the stock of an item
// that has orders returns ErrHasOrders: the orders' qty is already counted and
// silently rebasing it would break conservation (I3). Changing the bucket
// count lays the remaining stock out anew (rebucket); the caller must have
// made sure no reservation is pending (the catalog does), and an unfinished
// transfer returns ErrTransfersOpen. The item's waiting room (its
// item_queues row) is not written here: it is pkg/waitroom's, and the
// caller saves it in the same transaction (waitroom.SaveQueue, as the
// catalog does).
func UpsertItem(ctx context.Context, tx *sql.Tx, it Item) (ItemChange, error) {
	cur, err := GetItemForUpdate(ctx, tx, it.ID)
	if errors.Is(err, ErrNotFound) {
		it.Stock, it.Buckets = it.TotalStock, max(it.Buckets, 1)
		_, err = tx.ExecContext(ctx,
			"INSERT INTO items (id, name, price_cents, total_stock, stock, per_user_limit, starts_at, ends_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			it.ID, it.Name, it.PriceCents, it.TotalStock, it.Stock, it.PerUserLimit, it.StartsAt.UTC(), it.EndsAt.UTC())
		if err != nil {
			return ItemChange{}, fmt.Errorf("store: insert item %d: %w", it.ID, err)
		}
		if it.Bucketed() {
			if err := rebucket(ctx, tx, it, it.Buckets); err != nil {
				return ItemChange{}, err
			}
		}
		return ItemChange{Item: it, Created: true, StockChanged: true, BucketsChanged: it.Bucketed(), PrevBuckets: 1}, nil
	}
	if err != nil {
		return ItemChange{}, err
	}
	if it.Buckets == 0 {
		it.Buckets = cur.Buckets
	}
	change := ItemChange{StockChanged: cur.TotalStock != it.TotalStock, BucketsChanged: cur.Buckets != it.Buckets, PrevBuckets: cur.Buckets}
	it.Stock = cur.Stock
	if change.StockChanged {
		n, err := countOrdersOf(ctx, tx, it.ID)
		if err != nil {
			return ItemChange{}, err
		}
		if n > 0 {
			return ItemChange{}, fmt.Errorf("%w: item %d has %d orders", ErrHasOrders, it.ID, n)
		}
		it.Stock = it.TotalStock
	}
	// A new total comes with its stock in the same statement, so lowering
	// it never meets CHECK (stock <= total_stock); rebucket then lays the
	// stock out over the buckets.
	_, err = tx.ExecContext(ctx,
		"UPDATE items SET name = ?, price_cents = ?, total_stock = ?, stock = IF(?, ?, stock), per_user_limit = ?, starts_at = ?, ends_at = ? WHERE id = ?",
		it.Name, it.PriceCents, it.TotalStock, change.StockChanged, it.TotalStock, it.PerUserLimit, it.StartsAt.UTC(), it.EndsAt.UTC(), it.ID)
	if err != nil {
		return ItemChange{}, fmt.Errorf("store: update item %d: %w", it.ID, err)
	}
	if change.StockChanged || change.BucketsChanged {
		open, err := OpenTransfersOf(ctx, tx, it.ID)
		if err != nil {
			return ItemChange{}, err
		}
		if open > 0 {
			return ItemChange{}, fmt.Errorf("%w: item %d has %d", ErrTransfersOpen, it.ID, open)
		}
		if err := RefusePendingStockChanges(ctx, tx, it.ID); err != nil {
			return ItemChange{}, err
		}
		if err := rebucket(ctx, tx, it, it.Buckets); err != nil {
			return ItemChange{}, err
		}
	}
	change.Item = it
	return change, nil
}

// OpenTransfersOf counts item's transfers between buckets that are not
// finished (PLANNED or MOVED).
func OpenTransfersOf(ctx context.Context, q Querier, itemID int64) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM stock_transfers WHERE item_id = ? AND state IN ('PLANNED','MOVED')", itemID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: open transfers of %d: %w", itemID, err)
	}
	return n, nil
}

func countOrdersOf(ctx context.Context, q Querier, itemID int64) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM orders WHERE item_id = ?", itemID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count orders of %d: %w", itemID, err)
	}
	return n, nil
}

// UnappliedRestoresOf returns the cancelled orders (request id, the bucket
// their qty went back to, and the qty) of item
// whose stock came back in MySQL but not yet in Redis
// (stock_restores.redis_applied_at IS NULL). A warm copies MySQL stock, which
// already counts them, so it must set their restore guards in Redis (named by
// request id, as the reaper's) or the reaper would give their qty back a
// second time (I5). The reaper owns stock_restores; this only reads it.
func UnappliedRestoresOf(ctx context.Context, q Querier, itemID int64) ([]Order, error) {
	out, err := sqlrows.List(ctx, q,
		"SELECT o.request_id, r.bucket, r.qty FROM stock_restores r JOIN orders o ON o.id = r.order_id"+
			" WHERE r.item_id = ? AND r.redis_applied_at IS NULL", []any{itemID},
		func(r sqlrows.Row) (Order, error) {
			o := Order{ItemID: itemID, Status: Cancelled}
			err := r.Scan(&o.RequestID, &o.Bucket, &o.Qty)
			return o, err
		})
	if err != nil {
		return nil, fmt.Errorf("store: unapplied restores of %d: %w", itemID, err)
	}
	return out, nil
}

// ListItems returns up to limit items with an id above after, in id order:
// a keyset page, so a page is the same whatever is created or deleted
// before it, and the cost of a page does not grow with its depth.
func ListItems(ctx context.Context, q Querier, after int64, limit int) ([]Item, error) {
	out, err := sqlrows.List(ctx, q, "SELECT "+itemCols+" FROM "+itemsFrom+" WHERE id > ? ORDER BY id LIMIT ?", []any{after, limit}, scanItem)
	if err != nil {
		return nil, fmt.Errorf("store: list items after %d: %w", after, err)
	}
	return out, nil
}

// EndItem ends item id's sale at at inside tx, holding the row lock, and
// returns the item as it now is. A sale that ends at or before at already
// is left as it is (an end is idempotent: the first one's time stays); one
// that has not started yet gets its start moved to 1 ms before its end, so
// the window stays well formed (starts_at before ends_at, as a PUT needs)
// and lies in the past.
func EndItem(ctx context.Context, tx *sql.Tx, id int64, at time.Time) (Item, error) {
	it, err := GetItemForUpdate(ctx, tx, id)
	if err != nil {
		return Item{}, err
	}
	at = at.UTC().Truncate(time.Millisecond) // DATETIME(3)
	if !it.EndsAt.After(at) {
		return it, nil
	}
	it.EndsAt = at
	if !it.StartsAt.Before(at) {
		it.StartsAt = at.Add(-time.Millisecond)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE items SET starts_at = ?, ends_at = ? WHERE id = ?", it.StartsAt, it.EndsAt, id); err != nil {
		return Item{}, fmt.Errorf("store: end item %d: %w", id, err)
	}
	return it, nil
}
