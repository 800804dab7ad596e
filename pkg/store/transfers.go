package store

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/internal/sqlrows"
)

// A transfer moves qty units of a bucketed item from one bucket to another,
// in MySQL (the two item_buckets rows, stock and total_stock together) and in
// Redis (the two buckets' stock keys, or for a waitlist transfer the pools
// of the two buckets' shares of the item's waitlist: Kind). pkg/rebalance owns transfers end to
// end: it plans, moves and ends them (its transfers_sql.go and movesql.go
// hold those statements). What stays here is what others read: the row's
// shape and states, and the open transfers of an item, which a warm refuses
// on (pkg/catalog) and the auditor counts (OpenTransferAge). Its
// stock_transfers row says how far it got, so whoever finds it open
// finishes it:
//
//	PLANNED   -> the Redis take from the donor may or may not have run
//	MOVED     -> MySQL moved stock and total; the Redis give may not have run
//	DONE      -> both stores moved
//	ABANDONED -> the donor had too little in Redis: nothing moved anywhere;
//	             or too little free in MySQL (a broken invariant): nothing
//	             moved in MySQL, and the Redis donor got the qty back,
//	             reconciled down to MySQL's stock (pkg/rebalance)
//
// A MOVED or DONE transfer's qty is what moved: less than planned when
// MySQL's donor had less than Redis took.
//
// Every state change is a CAS on the state, so two drivers of one transfer
// change each row once.

// TransferState is a stock_transfers.state.
type TransferState string

// The states of a transfer.
const (
	TransferPlanned   TransferState = "PLANNED"
	TransferMoved     TransferState = "MOVED"
	TransferDone      TransferState = "DONE"
	TransferAbandoned TransferState = "ABANDONED"
)

// Open reports whether the transfer still has a step to run.
func (s TransferState) Open() bool { return s == TransferPlanned || s == TransferMoved }

// TransferKind is a stock_transfers.kind: what the transfer moves.
type TransferKind string

// The kinds of a transfer. Both move the two bucket rows alike in MySQL
// (the waitlist's units are stock there); in Redis a stock transfer moves
// the buckets' stock keys and a waitlist transfer the pools of their shares
// of the item's waitlist (pkg/rebalance).
const (
	TransferStock    TransferKind = "STOCK"
	TransferWaitlist TransferKind = "WAITLIST"
)

// Transfer is one stock_transfers row.
type Transfer struct {
	ID       int64
	ItemID   int64
	From, To int
	Qty      int64
	State    TransferState
	Kind     TransferKind
	// CreatedAt (ms) tells this transfer from one of an earlier database
	// that had the same AUTO_INCREMENT id (pkg/rebalance names its Redis
	// guards by both).
	CreatedAt time.Time
}

const transferCols = "id, item_id, from_bucket, to_bucket, qty, state, kind, created_at"

func scanTransfer(row interface{ Scan(...any) error }) (Transfer, error) {
	var t Transfer
	var st, kind string
	if err := row.Scan(&t.ID, &t.ItemID, &t.From, &t.To, &t.Qty, &st, &kind, &t.CreatedAt); err != nil {
		return t, err
	}
	t.State, t.Kind = TransferState(st), TransferKind(kind)
	return t, nil
}

// QueryTransfers returns the stock_transfers rows that match where (an SQL
// condition with ? placeholders for args, and any ORDER BY or LIMIT after
// it), read whole: the one reader of the row, for the warm's refusal here
// and the rebalancer (pkg/rebalance), which owns the other statements on
// the table.
func QueryTransfers(ctx context.Context, q Querier, where string, args ...any) ([]Transfer, error) {
	return sqlrows.List(ctx, q, "SELECT "+transferCols+" FROM stock_transfers WHERE "+where, args, scanTransfer)
}

// OpenTransfersOfItem returns up to limit of item's open transfers, oldest
// first: what a warm names when it refuses.
func OpenTransfersOfItem(ctx context.Context, q Querier, itemID int64, limit int) ([]Transfer, error) {
	out, err := QueryTransfers(ctx, q, "item_id = ? AND state IN ('PLANNED','MOVED') ORDER BY id LIMIT ?", itemID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: open transfers of %d: %w", itemID, err)
	}
	return out, nil
}

// OpenTransferAge counts item's open transfers and says how long ago, by
// MySQL's clock (which stamped created_at), the oldest was planned (0 with
// none). A transfer runs in milliseconds; one open for a minute is stuck.
func OpenTransferAge(ctx context.Context, q Querier, itemID int64) (int64, time.Duration, error) {
	var n, us int64
	err := q.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(created_at), NOW(3)), 0)"+
		" FROM stock_transfers WHERE item_id = ? AND state IN ('PLANNED','MOVED')", itemID).Scan(&n, &us)
	if err != nil {
		return 0, 0, fmt.Errorf("store: open transfer age of %d: %w", itemID, err)
	}
	return n, time.Duration(max(us, 0)) * time.Microsecond, nil
}
