package rebalance

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Waitlist transfers (issue 41): a bucketed item's waitlist keeps one share
// per bucket, in the bucket's slot (stock.Keys.Waitlist). A unit released in
// one bucket waits in that bucket's pool, and an offer must live in its
// buyer's home bucket, where admit.lua claims it beside the buyer mark; so
// the waiting room's gate, to offer a unit to a buyer of another bucket,
// first moves it from one pool to the other. That move is a transfer like
// the policy's, of kind WAITLIST: the same stock_transfers row and states,
// the same MySQL step (the two item_buckets rows, which count the waitlist's
// units as stock, move stock and total together), the same live and done
// marks, guards and resume by any pass of any replica; only the Redis steps
// take from the donor's pool and give to the recipient's
// (lua/waitlist_out.lua, waitlist_in.lua), each counting what it moved
// (moved_out, moved_in), so each bucket's share balances on its own at every
// moment (I9) and the units in flight are the difference of the two sums.
// Redis is taken from before MySQL moves and given to after, as for stock: a
// bucket never holds, in Redis, units MySQL does not count in its row.
//
// The gate reaches these through its PoolMover (pkg/waitroom), which the
// reaper's main wires to the Rebalancer, so pkg/waitroom does not import
// this package. They may run while the same Rebalancer passes (Run): they
// touch none of its per-pass state, only its stores, metrics and log.

// MovePool moves qty units of item itemID's waitlist (of buckets buckets)
// from bucket from's pool to bucket to's, and returns how many moved: qty,
// or 0 when the donor's pool no longer had them (offered or given back
// meanwhile: the transfer is ABANDONED, nothing moved anywhere), or fewer
// when the MySQL step cut it (a broken invariant, as for stock). The
// transfer is driven to its end with a context detached from ctx's
// cancellation, bounded as a pass's are, so a caller that gives up does not
// leave it half way; one left open (a crash) is finished by the next pass of
// any rebalancer, or by ResumePool.
func (r *Rebalancer) MovePool(ctx context.Context, itemID int64, buckets, from, to int, qty int64) (int64, error) {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	t, err := planTransfer(pctx, r.db, store.TransferWaitlist, itemID, buckets, from, to, qty)
	cancel()
	if err != nil {
		return 0, err
	}
	d, err := r.run(ctx, t)
	if err != nil {
		return 0, err
	}
	switch {
	case d.won && d.state == store.TransferDone:
		r.m.Done.Inc()
	case d.won && d.state == store.TransferAbandoned:
		r.m.Abandoned.Inc()
	}
	r.log.Debug("rebalance: waitlist transfer", "transfer_id", t.ID, "item_id", itemID, "from", from, "to", to,
		"qty", qty, "state", string(d.state), "moved", d.qty)
	if d.state != store.TransferDone {
		return 0, nil
	}
	return d.qty, nil
}

// ResumePool drives item itemID's open waitlist transfers to their end: a
// gate whose mover died half way finds its units again without waiting for
// a rebalancer's pass (there may be none: FLASHSALE_REBALANCE_INTERVAL 0).
func (r *Rebalancer) ResumePool(ctx context.Context, itemID int64) error {
	qctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	ts, err := store.QueryTransfers(qctx, r.db, "item_id = ? AND state IN ('PLANNED','MOVED') AND kind = ? ORDER BY id LIMIT ?",
		itemID, string(store.TransferWaitlist), r.cfg.ResumePage)
	cancel()
	if err != nil {
		return fmt.Errorf("rebalance: open waitlist transfers of item %d: %w", itemID, err)
	}
	return r.finishOpen(ctx, ts)
}
