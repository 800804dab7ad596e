package store

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// This file holds the order writer's (consumer's) SQL: the batched order
// insert, the stock CAS and the look-ups that make a redelivered batch a
// no-op. Everything takes a Querier so it runs inside the writer's one
// transaction per item.

// NewOrder is one order the writer is about to insert.
type NewOrder struct {
	RequestID string
	UserID    int64
	Qty       int
}

// ExistingBuyers returns which of users already hold an order (any status)
// for item, with the request id of that order: a second request of theirs is
// a duplicate_buyer, and the buyer mark must name the first. Checking first
// keeps the multi-row INSERT from failing on UNIQUE (user_id, item_id).
func ExistingBuyers(ctx context.Context, q Querier, itemID int64, users []int64) (map[int64]string, error) {
	out := map[int64]string{}
	if len(users) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(users)+1)
	args = append(args, itemID)
	for _, u := range users {
		args = append(args, u)
	}
	hs, err := sqlrows.List(ctx, q, "SELECT user_id, request_id FROM orders WHERE item_id = ? AND user_id IN ("+placeholders(len(users))+")", args, scanHolding)
	if err != nil {
		return nil, fmt.Errorf("store: existing buyers of %d: %w", itemID, err)
	}
	for _, h := range hs {
		out[h.UserID] = h.RequestID
	}
	return out, nil
}

// InsertOrders writes UNPAID orders of one item in one multi-row INSERT and
// returns them as stored (InsertOrdersOf). expires_at is computed by the
// database (NOW(3) + window) so pay and reaper, which judge deadlines by the
// database clock too, agree with it. A duplicate key (IsDuplicate) means
// another writer got there first: roll back and retry.
func InsertOrders(ctx context.Context, q Querier, itemID int64, bucket int, priceCents int64, window time.Duration, os []NewOrder) ([]Order, error) {
	rows := make([]ItemOrder, len(os))
	for i, o := range os {
		rows[i] = ItemOrder{NewOrder: o, ItemID: itemID, Bucket: bucket, PriceCents: priceCents}
	}
	out, err := InsertOrdersOf(ctx, q, window, rows)
	if err != nil {
		return nil, fmt.Errorf("store: item %d: %w", itemID, err)
	}
	return out, nil
}

// TakeStock decrements the stock row of bucket of item it by qty if it has
// that much: a compare-and-set that never goes negative (I7). It reports
// false, with no change, when the stock is short. An unbucketed item's row
// is items; a bucketed item's is its item_buckets row, so writers of
// different buckets never wait on each other's lock.
func TakeStock(ctx context.Context, q Querier, it Item, bucket int, qty int64) (bool, error) {
	if qty == 0 {
		return true, nil
	}
	itemID := it.ID
	query, args := "UPDATE items SET stock = stock - ? WHERE id = ? AND stock >= ?", []any{qty, itemID, qty}
	if it.Bucketed() {
		query = "UPDATE item_buckets SET stock = stock - ? WHERE item_id = ? AND bucket = ? AND stock >= ?"
		args = []any{qty, itemID, StockRowOf(it, bucket), qty}
	}
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("store: take %d of item %d: %w", qty, itemID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: take %d of item %d: %w", qty, itemID, err)
	}
	return n == 1, nil
}

// OrdersByRequest reads the orders of requestIDs (those that exist).
func OrdersByRequest(ctx context.Context, q Querier, requestIDs []string) ([]Order, error) {
	if len(requestIDs) == 0 {
		return nil, nil
	}
	out, err := sqlrows.List(ctx, q,
		"SELECT "+orderCols+" FROM orders WHERE request_id IN ("+placeholders(len(requestIDs))+")", strArgs(requestIDs), scanOrder)
	if err != nil {
		return nil, fmt.Errorf("store: orders by request: %w", err)
	}
	return out, nil
}

func strArgs(ss []string) []any {
	args := make([]any, len(ss))
	for i, s := range ss {
		args[i] = s
	}
	return args
}
