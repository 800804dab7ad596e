package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// ErrNotFound is returned when a row does not exist.
var ErrNotFound = errors.New("store: not found")

// ErrHasOrders is returned when an item's stock may no longer change because
// orders exist for it.
var ErrHasOrders = errors.New("store: item has orders")

// Item is a sale item.
type Item struct {
	ID         int64
	Name       string
	PriceCents int64
	TotalStock int64
	// Stock is what MySQL still has to sell: items.stock plus, for a
	// bucketed item, the sum of its item_buckets rows.
	Stock        int64
	PerUserLimit int
	StartsAt     time.Time
	EndsAt       time.Time
	// Buckets is the item's bucket count (1: unbucketed, items.stock is its
	// stock row; more: item_buckets rows are, see buckets.go).
	Buckets int
	// ItemQueue is the item's waiting room, carried for the catalog, the
	// audit and the admin views (itemqueue.go).
	ItemQueue
}

// Bucketed reports whether the item's stock lives in item_buckets rows.
func (it Item) Bucketed() bool { return it.Buckets > 1 }

// itemsFrom is what itemCols are read from (ItemsFrom, itemqueue.go).
const itemsFrom = ItemsFrom

const itemCols = "id, name, price_cents, total_stock," +
	" stock + COALESCE((SELECT SUM(b.stock) FROM item_buckets b WHERE b.item_id = items.id), 0)," +
	" per_user_limit, starts_at, ends_at, buckets, " + QueueCols

func scanItem(row interface{ Scan(...any) error }) (Item, error) {
	var it Item
	var q QueueRow
	err := row.Scan(append([]any{&it.ID, &it.Name, &it.PriceCents, &it.TotalStock, &it.Stock, &it.PerUserLimit, &it.StartsAt, &it.EndsAt, &it.Buckets},
		q.Dest()...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return it, ErrNotFound
	}
	it.ItemQueue = q.Queue()
	return it, err
}

// GetItem reads one item.
func GetItem(ctx context.Context, q Querier, id int64) (Item, error) {
	it, err := scanItem(q.QueryRowContext(ctx, "SELECT "+itemCols+" FROM "+itemsFrom+" WHERE id = ?", id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return it, fmt.Errorf("store: get item %d: %w", id, err)
	}
	return it, err
}

// GetItemForUpdate reads one item and locks its row until the transaction
// ends: every stock change of the item waits behind it.
func GetItemForUpdate(ctx context.Context, tx *sql.Tx, id int64) (Item, error) {
	it, err := scanItem(tx.QueryRowContext(ctx, "SELECT "+itemCols+" FROM "+itemsFrom+" WHERE id = ? FOR UPDATE", id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return it, fmt.Errorf("store: lock item %d: %w", id, err)
	}
	return it, err
}

// ListItemIDs returns every item id (the reaper's orphan sweep walks them;
// the auditor runs a query of its own).
func ListItemIDs(ctx context.Context, q Querier) ([]int64, error) {
	ids, err := sqlrows.List(ctx, q, "SELECT id FROM items ORDER BY id", nil, sqlrows.Value[int64])
	if err != nil {
		return nil, fmt.Errorf("store: list items: %w", err)
	}
	return ids, nil
}

// Holding is one buyer's order of an item, by request id: what Redis' buyer
// mark (user id -> request id) must carry.
type Holding struct {
	UserID    int64
	RequestID string
}

// BuyersOf returns the users holding an order (any status) for item, with
// the request of that order: the buyer marks Redis must carry.
func BuyersOf(ctx context.Context, q Querier, itemID int64) ([]Holding, error) {
	out, err := sqlrows.List(ctx, q, "SELECT user_id, request_id FROM orders WHERE item_id = ?", []any{itemID}, scanHolding)
	if err != nil {
		return nil, fmt.Errorf("store: buyers of %d: %w", itemID, err)
	}
	return out, nil
}

// scanHolding reads a row of user_id, request_id.
func scanHolding(r sqlrows.Row) (Holding, error) {
	var h Holding
	err := r.Scan(&h.UserID, &h.RequestID)
	return h, err
}
