package store

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// orderCols are the columns an Order is read from (scanOrder's order).
const orderCols = "id, request_id, user_id, item_id, qty, price_cents, status, created_at, expires_at, paid_at, cancelled_at"

func scanOrder(r sqlrows.Row) (Order, error) {
	var o Order
	var status string
	err := r.Scan(&o.ID, &o.RequestID, &o.UserID, &o.ItemID, &o.Qty, &o.PriceCents, &status,
		&o.CreatedAt, &o.ExpiresAt, &o.PaidAt, &o.CancelledAt)
	o.Status = OrderStatus(status)
	return o, err
}

// insertedOrders reads back the orders one multi-row INSERT wrote, whose
// first auto-increment id was first (the statement's LastInsertId), so the
// writer learns their ids and the database's times without reading each
// order by its request id.
//
// Why by id range: InnoDB gives the rows of one multi-row INSERT
// consecutive ids, auto_increment_increment apart (3 on a three-node Galera
// cluster), so the range [first, first + (n-1) × increment] holds them. A
// primary-key range read of 500 orders cost MariaDB about 1 µs a row here,
// the same orders read by request id 10-16 µs a row (an IN list of 500
// strings, a secondary-index probe each): most of the orders read-back's
// cost, in the write path's busiest transaction (BENCHMARKS.md, "The
// orders read-back by id range").
//
// Why it stays correct when that does not hold: with
// innodb_autoinc_lock_mode 2 (MySQL 8's default, Galera's requirement) the
// manual promises only unique, increasing ids, so another INSERT's rows may
// interleave. The range read keeps only the rows whose request id is one of
// requestIDs (request_id is unique), and any of them it did not find are
// read by request id, as before.
func insertedOrders(ctx context.Context, q Querier, first int64, requestIDs []string) ([]Order, error) {
	want := make(map[string]bool, len(requestIDs))
	for _, id := range requestIDs {
		want[id] = true
	}
	out := make([]Order, 0, len(requestIDs))
	if first > 0 {
		err := sqlrows.Each(ctx, q,
			"SELECT "+orderCols+" FROM orders WHERE id BETWEEN ? AND ? + (? - 1) * @@auto_increment_increment",
			[]any{first, first, len(requestIDs)},
			func(r sqlrows.Row) error {
				o, err := scanOrder(r)
				if err != nil {
					return err
				}
				if want[o.RequestID] {
					delete(want, o.RequestID)
					out = append(out, o)
				}
				return nil
			})
		if err != nil {
			return nil, fmt.Errorf("store: read back %d orders from id %d: %w", len(requestIDs), first, err)
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	rest := make([]string, 0, len(want))
	for _, id := range requestIDs {
		if want[id] {
			rest = append(rest, id)
		}
	}
	more, err := OrdersByRequest(ctx, q, rest)
	if err != nil {
		return nil, err
	}
	return append(out, more...), nil
}
