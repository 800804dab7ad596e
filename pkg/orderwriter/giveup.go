package orderwriter

import (
	"context"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// giveUp ends a message that keeps failing alone with a permanent error. It
// is dead-lettered (its bytes and the cause, for whoever fixes the cause),
// then rejected through the arbiter (REJECTED unprocessable), and the
// after-commit step releases its reservation (stock and buyer mark come
// back) and caches the status: the buyer's poll ends now, not after the
// orphan grace.
//
// Deciding it, rather than only dead-lettering it, means a replay of the DLQ
// message is a no-op: the DLQ is for diagnosis. The alternative, leaving it
// undecided so a replay within the orphan grace could still order it, would
// keep every buyer of a bad deploy PENDING for the whole grace and then
// reject them anyway.
//
// The entry is done only when all of it succeeded; otherwise it is
// redelivered and given up again (the DLQ may then hold it twice; the
// arbiter decides it once). If the arbiter itself refuses the decision
// permanently, the message stays dead-lettered and the reaper voids its
// reservation after the grace.
func (c *Consumer) giveUp(ctx context.Context, e *entry, m orderlog.OrderMessage, cause error) {
	if c.deadLetter(ctx, []deadLetter{{msg: e.msg, cause: cause}}) != nil {
		return
	}
	res, err := c.rejectUnprocessable(ctx, m)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("could not reject a dead-lettered request; the reaper voids it after the orphan grace",
				"item", m.ItemID, "request_id", m.RequestID, "err", err)
			c.tr.markDone(e)
		}
		return
	}
	c.settle(ctx, []*entry{e}, res)
}

// rejectUnprocessable decides m REJECTED unprocessable in a transaction of
// its own, retrying transient errors until ctx ends. The result carries the
// winning decision for the after-commit step: this one, or a REJECTED one
// made before (whose Redis step is replayed, idempotently). A request found
// ORDERED, ABORTED or VOIDED is left to its decider.
func (c *Consumer) rejectUnprocessable(ctx context.Context, m orderlog.OrderMessage) (ItemResult, error) {
	d := store.Decision{RequestID: m.RequestID, ItemID: m.ItemID, UserID: m.UserID, Qty: m.Qty,
		Outcome: store.Rejected, Reason: store.ReasonUnprocessable}
	bo := backoff{min: c.cfg.MinBackoff, max: c.cfg.MaxBackoff}
	for {
		tctx, cancel := context.WithTimeout(ctx, c.cfg.StoreTimeout)
		won, existing, err := store.Decide(tctx, c.items.DB, d)
		cancel()
		if err == nil {
			res := ItemResult{ItemID: m.ItemID, New: map[[2]string]int{}}
			if won {
				res.New[[2]string{string(d.Outcome), d.Reason}]++
				c.log.Warn("rejected a request that cannot be written", "item", m.ItemID, "request_id", m.RequestID, "reason", d.Reason)
			}
			if existing.Outcome == store.Rejected {
				res.Rejected = []store.Decision{existing}
			} else {
				res.Dropped++
			}
			return res, nil
		}
		if ctx.Err() != nil || !store.IsTransient(err) {
			return ItemResult{}, err
		}
		c.m.Retries.WithLabelValues("transient").Inc()
		wait := bo.next()
		c.log.Warn("reject unprocessable request failed; retrying", "request_id", m.RequestID, "in", wait, "err", err)
		if !sleep(ctx, wait) {
			return ItemResult{}, ctx.Err()
		}
	}
}
