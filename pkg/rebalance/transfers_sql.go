package rebalance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The stock_transfers statements of the rebalancer, which owns the table's
// writes (pkg/store keeps the row's shape and the reads others make:
// store.QueryTransfers, store.OpenTransfersOfItem, store.OpenTransferAge).
// Every state change is a CAS on the state, so two drivers of one transfer
// change each row once. The MySQL step itself is movesql.go.

// ErrBucketsChanged is returned by PlanTransfer when the item no longer has
// the bucket count the plan was made for (re-bucketed between sales).
var ErrBucketsChanged = errors.New("rebalance: bucket count changed")

// PlanTransfer records a transfer of qty from bucket from to bucket to of
// item, which the caller found with buckets buckets, and returns it
// PLANNED. It is the first step of every transfer (exported so the tests of
// the packages that refuse while one is open, pkg/catalog and
// pkg/auditor, plan one as the rebalancer does).
//
// It holds a shared lock on the item's row while it inserts. A warm (and a
// re-bucketing) locks that row exclusively and refuses while a transfer is
// open, so a transfer is either planned before a warm starts, and the warm
// refuses, or after it has committed, and the transfer moves the stock the
// warm wrote. Without the lock a warm could copy MySQL's donor stock over a
// Redis take that MySQL has not seen yet, and the units would be given
// twice.
func PlanTransfer(ctx context.Context, db *sql.DB, itemID int64, buckets, from, to int, qty int64) (store.Transfer, error) {
	return planTransfer(ctx, db, store.TransferStock, itemID, buckets, from, to, qty)
}

// planTransfer is PlanTransfer for a transfer of kind: stock, or units of
// the item's waitlist (MovePool).
func planTransfer(ctx context.Context, db *sql.DB, kind store.TransferKind, itemID int64, buckets, from, to int, qty int64) (store.Transfer, error) {
	if from == to || from < 0 || to < 0 || from >= buckets || to >= buckets || qty < 1 {
		return store.Transfer{}, fmt.Errorf("rebalance: plan transfer of item %d %d->%d qty %d of %d buckets: bad arguments", itemID, from, to, qty, buckets)
	}
	var t store.Transfer
	err := store.RunInTx(ctx, db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		var n int
		err := tx.QueryRowContext(ctx, "SELECT buckets FROM items WHERE id = ? LOCK IN SHARE MODE", itemID).Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("rebalance: plan transfer of item %d: %w", itemID, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("rebalance: plan transfer of item %d: %w", itemID, err)
		}
		if n != buckets {
			return fmt.Errorf("rebalance: plan transfer of item %d: %w: %d buckets, planned for %d", itemID, ErrBucketsChanged, n, buckets)
		}
		res, err := tx.ExecContext(ctx,
			"INSERT INTO stock_transfers (item_id, from_bucket, to_bucket, qty, kind) VALUES (?, ?, ?, ?, ?)", itemID, from, to, qty, string(kind))
		if err != nil {
			return fmt.Errorf("rebalance: plan transfer of item %d: %w", itemID, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("rebalance: plan transfer of item %d: %w", itemID, err)
		}
		t, err = getTransfer(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("rebalance: plan transfer of item %d: read back: %w", itemID, err)
		}
		return nil
	})
	return t, err
}

// getTransfer reads one transfer (store.ErrNotFound when there is none).
func getTransfer(ctx context.Context, q store.Querier, id int64) (store.Transfer, error) {
	ts, err := store.QueryTransfers(ctx, q, "id = ?", id)
	if err != nil {
		return store.Transfer{}, fmt.Errorf("rebalance: transfer %d: %w", id, err)
	}
	if len(ts) == 0 {
		return store.Transfer{}, fmt.Errorf("rebalance: transfer %d: %w", id, store.ErrNotFound)
	}
	return ts[0], nil
}

// openTransfers returns up to limit transfers that are PLANNED or MOVED,
// oldest first: the work a crashed or interrupted mover left.
func openTransfers(ctx context.Context, q store.Querier, limit int) ([]store.Transfer, error) {
	ts, err := store.QueryTransfers(ctx, q, "state IN ('PLANNED','MOVED') ORDER BY id LIMIT ?", limit)
	if err != nil {
		return nil, fmt.Errorf("rebalance: open transfers: %w", err)
	}
	return ts, nil
}

// abandonTransfer marks a PLANNED transfer ABANDONED (the donor was short
// in Redis, so nothing moved) and reports whether this call changed it.
func abandonTransfer(ctx context.Context, q store.Querier, id int64) (bool, error) {
	return casTransfer(ctx, q, id, store.TransferPlanned, store.TransferAbandoned)
}

// completeTransfer marks a MOVED transfer DONE (Redis gave the units to the
// recipient) and reports whether this call changed it.
func completeTransfer(ctx context.Context, q store.Querier, id int64) (bool, error) {
	return casTransfer(ctx, q, id, store.TransferMoved, store.TransferDone)
}

func casTransfer(ctx context.Context, q store.Querier, id int64, from, to store.TransferState) (bool, error) {
	res, err := q.ExecContext(ctx, "UPDATE stock_transfers SET state = ? WHERE id = ? AND state = ?", string(to), id, string(from))
	if err != nil {
		return false, fmt.Errorf("rebalance: transfer %d %s -> %s: %w", id, from, to, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("rebalance: transfer %d %s -> %s: %w", id, from, to, err)
	}
	return n == 1, nil
}

// bucketedItem is an item the rebalancer looks after.
type bucketedItem struct {
	ID      int64
	Buckets int
}

// queryItems returns the bucketed items whose sale window, widened by
// margin on both sides, contains now, and those with open transfers
// whatever their window: the items whose stock may have to move, or be
// finished moving.
func queryItems(ctx context.Context, q store.Querier, now time.Time, margin time.Duration) ([]bucketedItem, error) {
	out, err := sqlrows.List(ctx, q,
		"SELECT i.id, i.buckets FROM items i WHERE i.buckets > 1 AND ((i.starts_at <= ? AND i.ends_at > ?)"+
			" OR EXISTS (SELECT 1 FROM stock_transfers t WHERE t.item_id = i.id AND t.state IN ('PLANNED','MOVED')))"+
			" ORDER BY i.id",
		[]any{now.Add(margin).UTC(), now.Add(-margin).UTC()},
		func(r sqlrows.Row) (bucketedItem, error) {
			var it bucketedItem
			err := r.Scan(&it.ID, &it.Buckets)
			return it, err
		})
	if err != nil {
		return nil, fmt.Errorf("rebalance: items: %w", err)
	}
	return out, nil
}
