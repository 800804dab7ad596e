package rebalance

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// cutFunc is the Redis side of a transfer's MySQL step (transferCutTo),
// run while moveTransfer holds the transfer's row and both bucket rows
// locked. free is MySQL's donor stock less the restores Redis has not
// applied yet, short whether the donor row holds less than the transfer's
// qty. It returns the qty to move: the transfer's qty normally, less (down
// to 0) when Redis took units MySQL's donor does not have. Its decision
// must stick: once it cut a transfer it answers the same.
type cutFunc func(ctx context.Context, free int64, short bool) (int64, error)

// moved is what moveTransfer did: won is false when another driver had
// already moved the transfer past PLANNED (nothing changed). Otherwise
// state is MOVED with qty the qty moved (the transfer's, or less when it
// was cut), or ABANDONED when the cut left nothing to move.
type moved struct {
	won   bool
	state store.TransferState
	qty   int64
}

// moveTransfer runs the MySQL step of t (which Redis has taken out of the
// donor): in one READ COMMITTED transaction, PLANNED -> MOVED, and the qty
// off the donor's stock and total and onto the recipient's.
//
// The state CAS comes first and locks the transfer's row, so of two
// drivers racing only one moves; the other then finds it past PLANNED. The
// two bucket rows are locked next, in bucket order, so transfers never
// deadlock on each other, and no consumer or reaper changes the donor's
// stock while cut decides. A donor row with less than the qty is a broken
// invariant (Redis took units MySQL does not have, as after a Redis
// failover without WAIT): the transfer moves what MySQL has free (cut,
// which also reconciles the Redis donor down to MySQL), so it still ends,
// DONE with a smaller qty or ABANDONED with nothing to move, instead of
// staying PLANNED for ever. A missing bucket row is store.ErrInvariant and
// changes nothing.
func moveTransfer(ctx context.Context, db *sql.DB, t store.Transfer, cut cutFunc) (moved, error) {
	var out moved
	err := store.RunInTx(ctx, db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		out = moved{}
		// The CAS first: it locks the row, and a driver that loses it
		// touches nothing else. The cut below may still turn the row
		// ABANDONED, or lower its qty, before the commit.
		ok, err := casTransfer(ctx, tx, t.ID, store.TransferPlanned, store.TransferMoved)
		if err != nil || !ok {
			return err
		}
		donor, err := lockTransferRows(ctx, tx, t)
		if err != nil {
			return err
		}
		short, free := donor < t.Qty, donor
		if short {
			var unapplied int64
			err := tx.QueryRowContext(ctx, "SELECT COALESCE(SUM(r.qty), 0) FROM stock_restores r JOIN items i ON i.id = r.item_id"+
				" WHERE r.item_id = ? AND r.redis_applied_at IS NULL AND r.bucket MOD i.buckets = ?", t.ItemID, t.From).Scan(&unapplied)
			if err != nil {
				return fmt.Errorf("rebalance: move transfer %d: unapplied restores: %w", t.ID, err)
			}
			free -= unapplied
		}
		qty, err := cut(ctx, free, short)
		if err != nil {
			return err
		}
		if qty < 0 || qty > t.Qty || qty > donor {
			return fmt.Errorf("rebalance: move transfer %d of item %d: %w: cut to %d of %d, donor holds %d",
				t.ID, t.ItemID, store.ErrInvariant, qty, t.Qty, donor)
		}
		if qty == 0 {
			if _, err := casTransfer(ctx, tx, t.ID, store.TransferMoved, store.TransferAbandoned); err != nil {
				return err
			}
			out = moved{won: true, state: store.TransferAbandoned}
			return nil
		}
		if qty < t.Qty {
			if _, err := tx.ExecContext(ctx, "UPDATE stock_transfers SET qty = ? WHERE id = ?", qty, t.ID); err != nil {
				return fmt.Errorf("rebalance: move transfer %d: %w", t.ID, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE item_buckets SET stock = stock - ?, total_stock = total_stock - ?"+
			" WHERE item_id = ? AND bucket = ?", qty, qty, t.ItemID, t.From); err != nil {
			return fmt.Errorf("rebalance: move transfer %d bucket %d: %w", t.ID, t.From, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE item_buckets SET stock = stock + ?, total_stock = total_stock + ?"+
			" WHERE item_id = ? AND bucket = ?", qty, qty, t.ItemID, t.To); err != nil {
			return fmt.Errorf("rebalance: move transfer %d bucket %d: %w", t.ID, t.To, err)
		}
		out = moved{won: true, state: store.TransferMoved, qty: qty}
		return nil
	})
	if err != nil {
		return moved{}, err
	}
	return out, nil
}

// lockTransferRows locks the donor's and the recipient's item_buckets rows
// of t, in bucket order, and returns the donor's stock.
func lockTransferRows(ctx context.Context, tx *sql.Tx, t store.Transfer) (int64, error) {
	var donor int64
	found := 0
	err := sqlrows.Each(ctx, tx, "SELECT bucket, stock FROM item_buckets WHERE item_id = ? AND bucket IN (?, ?) ORDER BY bucket FOR UPDATE",
		[]any{t.ItemID, t.From, t.To}, func(r sqlrows.Row) error {
			var b int
			var st int64
			if err := r.Scan(&b, &st); err != nil {
				return err
			}
			if b == t.From {
				donor = st
			}
			found++
			return nil
		})
	if err != nil {
		return 0, fmt.Errorf("rebalance: move transfer %d: %w", t.ID, err)
	}
	if found != 2 {
		return 0, fmt.Errorf("rebalance: move transfer %d of item %d: %w: %d of the rows of buckets %d and %d",
			t.ID, t.ItemID, store.ErrInvariant, found, t.From, t.To)
	}
	return donor, nil
}
