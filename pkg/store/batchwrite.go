package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// This file holds the set-based forms of orderwrite.go's statements: the
// order writer decides the groups of a many-item batch in one transaction
// with one statement per step instead of one per item. Every statement is
// bounded by batchRows rows, far under MySQL's 65,535 placeholders.

// batchRows bounds the rows of one statement (7 placeholders a row for
// orders: 56,000 at most).
const batchRows = 8000

// chunks calls f with successive slices of at most n elements of s.
func chunks[T any](s []T, n int, f func([]T) error) error {
	for len(s) > 0 {
		k := min(n, len(s))
		if err := f(s[:k]); err != nil {
			return err
		}
		s = s[k:]
	}
	return nil
}

// GetItems reads the items of ids that exist, by id.
func GetItems(ctx context.Context, q Querier, ids []int64) (map[int64]Item, error) {
	out := make(map[int64]Item, len(ids))
	err := chunks(ids, batchRows, func(ids []int64) error {
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		items, err := sqlrows.List(ctx, q, "SELECT "+itemCols+" FROM "+itemsFrom+" WHERE id IN ("+placeholders(len(ids))+")", args, scanItem)
		if err != nil {
			return fmt.Errorf("store: get %d items: %w", len(ids), err)
		}
		for _, it := range items {
			out[it.ID] = it
		}
		return nil
	})
	return out, err
}

// BuyerKey is one (item, user) pair.
type BuyerKey struct {
	ItemID, UserID int64
}

// ExistingBuyersAmong is ExistingBuyers for many items at once: which of
// pairs already hold an order (any status), with its request id. It reads by
// the users (the leading column of UNIQUE (user_id, item_id)) and keeps the
// pairs asked for.
func ExistingBuyersAmong(ctx context.Context, q Querier, pairs []BuyerKey) (map[BuyerKey]string, error) {
	out := map[BuyerKey]string{}
	want := make(map[BuyerKey]bool, len(pairs))
	var users []int64
	seen := map[int64]bool{}
	for _, p := range pairs {
		want[p] = true
		if !seen[p.UserID] {
			seen[p.UserID] = true
			users = append(users, p.UserID)
		}
	}
	err := chunks(users, batchRows, func(users []int64) error {
		args := make([]any, len(users))
		for i, u := range users {
			args[i] = u
		}
		err := sqlrows.Each(ctx, q, "SELECT item_id, user_id, request_id FROM orders WHERE user_id IN ("+placeholders(len(users))+")", args,
			func(r sqlrows.Row) error {
				var k BuyerKey
				var rid string
				if err := r.Scan(&k.ItemID, &k.UserID, &rid); err != nil {
					return err
				}
				if want[k] {
					out[k] = rid
				}
				return nil
			})
		if err != nil {
			return fmt.Errorf("store: existing buyers among %d: %w", len(users), err)
		}
		return nil
	})
	return out, err
}

// ItemOrder is one order of InsertOrdersOf: an order and the item row facts
// it is written with.
type ItemOrder struct {
	NewOrder
	ItemID     int64
	Bucket     int
	PriceCents int64
}

// InsertOrdersOf is InsertOrders across items, in multi-row INSERTs of at
// most batchRows rows, and returns the orders as stored (insertedOrders:
// their ids and the database's times), in no particular order. A duplicate
// key (IsDuplicate) means another writer got there first.
func InsertOrdersOf(ctx context.Context, q Querier, window time.Duration, os []ItemOrder) ([]Order, error) {
	us := window.Microseconds()
	out := make([]Order, 0, len(os))
	err := chunks(os, batchRows, func(os []ItemOrder) error {
		var sb strings.Builder
		sb.Grow(120 + len(os)*64)
		sb.WriteString("INSERT INTO orders (request_id, user_id, item_id, bucket, qty, price_cents, status, expires_at) VALUES ")
		args := make([]any, 0, len(os)*7)
		ids := make([]string, len(os))
		for i, o := range os {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString("(?,?,?,?,?,?,'UNPAID',DATE_ADD(NOW(3), INTERVAL ? MICROSECOND))")
			args = append(args, o.RequestID, o.UserID, o.ItemID, o.Bucket, o.Qty, o.PriceCents, us)
			ids[i] = o.RequestID
		}
		res, err := q.ExecContext(ctx, sb.String(), args...)
		if err != nil {
			return fmt.Errorf("store: insert %d orders: %w", len(os), err)
		}
		first, err := res.LastInsertId()
		if err != nil {
			first = 0 // read them back by request id
		}
		got, err := insertedOrders(ctx, q, first, ids)
		if err != nil {
			return err
		}
		out = append(out, got...)
		return nil
	})
	return out, err
}

// StockTake is what one stock row gives: qty units of the row of bucket of
// Item (as TakeStock).
type StockTake struct {
	Item   Item
	Bucket int
	Qty    int64
}

// row is the take's stock row: (item, StockRowOf bucket).
func (t StockTake) row() [2]int64 { return [2]int64{t.Item.ID, int64(StockRowOf(t.Item, t.Bucket))} }

// TakeStocks is TakeStock for many rows, all or nothing per row: every
// take's row is decremented only if it has that much. It reports how many
// rows took their stock; fewer than len(takes) (after merging takes of one
// row) means some row is short and the caller must roll back. Rows are
// taken in (item, bucket) order, so two writers lock them in the same order.
// Unbucketed items' rows go in one UPDATE of items with a CASE; bucketed
// rows one UPDATE each.
func TakeStocks(ctx context.Context, q Querier, takes []StockTake) (ok bool, err error) {
	merged := map[[2]int64]StockTake{}
	for _, t := range takes {
		if t.Qty == 0 {
			continue
		}
		m, seen := merged[t.row()]
		if seen {
			t.Qty += m.Qty
		}
		merged[t.row()] = t
	}
	rows := make([][2]int64, 0, len(merged))
	for r := range merged {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b [2]int64) int {
		if a[0] != b[0] {
			return int(min(max(a[0]-b[0], -1), 1))
		}
		return int(a[1] - b[1])
	})
	var flat []StockTake
	for _, r := range rows {
		t := merged[r]
		if t.Item.Bucketed() {
			if ok, err := TakeStock(ctx, q, t.Item, t.Bucket, t.Qty); err != nil || !ok {
				return false, err
			}
			continue
		}
		flat = append(flat, t)
	}
	ok = true
	err = chunks(flat, batchRows/4, func(ts []StockTake) error {
		if !ok {
			return nil
		}
		var cases strings.Builder
		args := make([]any, 0, len(ts)*4)
		for _, t := range ts {
			cases.WriteString(" WHEN ? THEN ?")
			args = append(args, t.Item.ID, t.Qty)
		}
		n := len(args)
		args = append(args, args[:n]...)
		for _, t := range ts {
			args = append(args, t.Item.ID)
		}
		c := "CASE id" + cases.String() + " END"
		res, err := q.ExecContext(ctx, "UPDATE items SET stock = stock - "+c+" WHERE stock >= "+c+" AND id IN ("+placeholders(len(ts))+")", args...)
		if err != nil {
			return fmt.Errorf("store: take stock of %d items: %w", len(ts), err)
		}
		got, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("store: take stock of %d items: %w", len(ts), err)
		}
		ok = got == int64(len(ts))
		return nil
	})
	return ok, err
}

// ShortStocks returns which of takes (merged per row) their rows' committed
// stock cannot cover now: a hint, read without locks after TakeStocks failed
// and the transaction rolled back, of which groups to decide request by
// request under the row lock.
func ShortStocks(ctx context.Context, q Querier, takes []StockTake) (map[[2]int64]bool, error) {
	need := map[[2]int64]int64{}
	ids := map[int64]bool{}
	var list []int64
	for _, t := range takes {
		need[t.row()] += t.Qty
		if !ids[t.Item.ID] {
			ids[t.Item.ID] = true
			list = append(list, t.Item.ID)
		}
	}
	have := map[[2]int64]int64{}
	err := chunks(list, batchRows, func(ids []int64) error {
		args := make([]any, 0, 2*len(ids))
		for _, id := range ids {
			args = append(args, id)
		}
		args = append(args, args...)
		err := sqlrows.Each(ctx, q, "SELECT id, 0, stock FROM items WHERE buckets <= 1 AND id IN ("+placeholders(len(ids))+
			") UNION ALL SELECT item_id, bucket, stock FROM item_buckets WHERE item_id IN ("+placeholders(len(ids))+")", args,
			func(row sqlrows.Row) error {
				var r [2]int64
				var n int64
				if err := row.Scan(&r[0], &r[1], &n); err != nil {
					return err
				}
				have[r] = n
				return nil
			})
		if err != nil {
			return fmt.Errorf("store: stock of %d items: %w", len(ids), err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[[2]int64]bool{}
	for r, n := range need {
		if have[r] < n {
			out[r] = true
		}
	}
	return out, nil
}

// RowOf is the stock row key TakeStocks and ShortStocks use for bucket of it.
func RowOf(it Item, bucket int) [2]int64 { return StockTake{Item: it, Bucket: bucket}.row() }
