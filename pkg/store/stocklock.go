package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// LockStockRows locks the stock rows of takes for the caller's transaction
// without waiting for a row another transaction holds (FOR UPDATE SKIP
// LOCKED, MySQL 8.0 and MariaDB 10.6 on) and returns the rows it could not
// lock, nil when it locked them all.
//
// A many-item transaction must not wait on one row: while it waits it
// holds the rows it has already locked, and a deadline does not free them,
// because the driver closes the connection but the server goes on waiting
// until its lock wait timeout (50 s by default), so one item locked by an
// operator's transaction or a stuck writer would hold up every item of the
// round. The caller rolls back and decides the busy rows' items apart,
// where each waits for its own row alone.
func LockStockRows(ctx context.Context, q Querier, takes []StockTake) (busy map[[2]int64]bool, err error) {
	want := map[[2]int64]bool{}
	var flat, bucketed []StockTake
	for _, t := range takes {
		if t.Qty == 0 || want[t.row()] {
			continue
		}
		want[t.row()] = true
		if t.Item.Bucketed() {
			bucketed = append(bucketed, t)
		} else {
			flat = append(flat, t)
		}
	}
	got := map[[2]int64]bool{}
	err = chunks(flat, batchRows, func(ts []StockTake) error {
		args := make([]any, len(ts))
		for i, t := range ts {
			args[i] = t.Item.ID
		}
		return lockRows(ctx, q, "SELECT id, 0 FROM items WHERE id IN ("+placeholders(len(ts))+") ORDER BY id FOR UPDATE SKIP LOCKED", args, got)
	})
	if err != nil {
		return nil, err
	}
	err = chunks(bucketed, batchRows/2, func(ts []StockTake) error {
		var where strings.Builder
		args := make([]any, 0, 2*len(ts))
		for i, t := range ts {
			if i > 0 {
				where.WriteString(" OR ")
			}
			where.WriteString("(item_id = ? AND bucket = ?)")
			r := t.row()
			args = append(args, r[0], r[1])
		}
		return lockRows(ctx, q, "SELECT item_id, bucket FROM item_buckets WHERE "+where.String()+" ORDER BY item_id, bucket FOR UPDATE SKIP LOCKED", args, got)
	})
	if err != nil {
		return nil, err
	}
	for r := range want {
		if !got[r] {
			if busy == nil {
				busy = map[[2]int64]bool{}
			}
			busy[r] = true
		}
	}
	return busy, nil
}

// lockRows runs query, a locking read of (item, bucket) rows, and adds the
// rows it returned to got.
func lockRows(ctx context.Context, q Querier, query string, args []any, got map[[2]int64]bool) error {
	err := sqlrows.Each(ctx, q, query, args, func(row sqlrows.Row) error {
		var r [2]int64
		if err := row.Scan(&r[0], &r[1]); err != nil {
			return err
		}
		got[r] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: lock stock rows: %w", err)
	}
	return nil
}
