package bucketview

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// Read-only views of a bucketed item's transfer bookkeeping and demand
// signals, for the audit and the auditor's gauges (pkg/audit, pkg/auditor).
// The rebalancer (pkg/rebalance) writes the marks; pkg/stock's admit.lua
// and want_lower.lua raise a want flag, and the rebalancer's
// transfer_in.lua clears it once the bucket's stock answers it.

// TransferMark is a reading of an item's transfers between buckets in
// Redis: Live are under way (TransfersLive), Done have finished
// (TransfersDone). Two equal readings with nothing live mean no unit was in
// flight between them (see Snapshot).
type TransferMark struct{ Live, Done int64 }

// Quiet reports whether no transfer was live at either reading and none
// finished between them.
func (m TransferMark) Quiet(later TransferMark) bool {
	return m.Live == 0 && m == later
}

// ReadTransferMark reads item's TransferMark in one MULTI.
func (s *Store) ReadTransferMark(ctx context.Context, itemID int64) (TransferMark, error) {
	return s.transferMark(ctx, stock.KeysOf(itemID))
}

// Wants reports, for each of item's n buckets, whether its want flag is up
// (stock.Keys.Want: a buyer found the bucket short within the flag's TTL,
// 2 s as pkg/stock sets it, while other buckets may have stock). One
// pipeline.
func (s *Store) Wants(ctx context.Context, itemID int64, n int) ([]bool, error) {
	pipe := s.st.Client().Pipeline()
	cmds := make([]*redis.IntCmd, n)
	for b := range n {
		cmds[b] = pipe.Exists(ctx, stock.BucketKeys(itemID, b).Want)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, stock.Unavailable(fmt.Sprintf("bucketview: want flags of item %d", itemID), err)
	}
	out := make([]bool, n)
	for b, c := range cmds {
		out[b] = c.Val() > 0
	}
	return out, nil
}
