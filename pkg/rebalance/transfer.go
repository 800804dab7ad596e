package rebalance

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// crashAfter is nil in production. This package's crash tests set it, in a
// child process only, to SIGKILL that process right after one of a
// transfer's writes: "out" (the Redis take from the donor) or "moved" (the
// MySQL commit), so the parent can prove the next pass repairs it.
var crashAfter func(step string)

func crashPoint(step string) {
	if crashAfter != nil {
		crashAfter(step)
	}
}

// driven is what one drive of a transfer did: the final state it reached
// (or the state it stopped in on an error), whether this drive was the
// one that made it final, and the transfer's qty as the drive left it:
// what moved, once DONE (less than planned when the MySQL step cut it).
type driven struct {
	state store.TransferState
	won   bool
	qty   int64
}

// errNoProgress is returned when a state CAS failed yet the row is still in
// the state the CAS expected: nothing else can change it, so it is a bug,
// not a race.
var errNoProgress = errors.New("rebalance: transfer made no progress")

// drive runs transfer t from its state to the end (DONE or ABANDONED, then
// finished in Redis). Every step is idempotent and every state change a
// CAS, so any number of drives of one transfer, concurrent or after a
// crash, move its units once in each store. ctx bounds the whole drive; the
// caller detaches it from shutdown so a transfer is not left half way by a
// SIGTERM (the next pass would finish it, but later).
//
// A step that finds the row changed by another driver reads it again and
// goes on from there with its qty, which the MySQL step may have cut.
func (r *Rebalancer) drive(ctx context.Context, t store.Transfer) (driven, error) {
	d := driven{state: t.State, qty: t.Qty}
	if !d.state.Open() {
		return d, finishTransfer(ctx, r.rdb, refOf(t))
	}
	// Again on a resume: the mover that planned it may have died before
	// its SADD, and the set may have lost it in a failover.
	if err := markLive(ctx, r.rdb, t.ItemID, t.ID); err != nil {
		return d, err
	}
	for d.state.Open() {
		var err error
		switch d.state {
		case store.TransferPlanned:
			d, err = r.stepOut(ctx, &t)
		case store.TransferMoved:
			d, err = r.stepIn(ctx, &t)
		default:
			err = fmt.Errorf("rebalance: transfer %d in unknown state %q", t.ID, d.state)
		}
		d.qty = t.Qty
		if err != nil {
			return d, err
		}
	}
	return d, finishTransfer(ctx, r.rdb, refOf(t))
}

// stepOut takes the qty out of the donor in Redis, then moves it in MySQL
// (or abandons the transfer when the donor was short), and returns the
// state that follows.
func (r *Rebalancer) stepOut(ctx context.Context, t *store.Transfer) (driven, error) {
	ref := refOf(*t)
	out, err := transferOut(ctx, r.rdb, ref)
	if err != nil {
		return driven{state: store.TransferPlanned}, err
	}
	crashPoint("out")
	switch out {
	case stepOK:
		var cut cutResult
		mv, err := moveTransfer(ctx, r.db, *t, func(ctx context.Context, free int64, short bool) (int64, error) {
			c, cerr := transferCutTo(ctx, r.rdb, ref, free, short)
			cut = c
			return c.moved, cerr
		})
		if err != nil {
			return driven{state: store.TransferPlanned}, err
		}
		crashPoint("moved")
		if !mv.won {
			break
		}
		if mv.qty < t.Qty {
			r.cutShort(ctx, *t, mv, cut)
		}
		t.State = mv.state
		if mv.state == store.TransferMoved {
			t.Qty = mv.qty
		}
		return driven{state: mv.state, won: mv.state == store.TransferAbandoned}, nil
	case stepShort, stepNoStock:
		if out == stepNoStock {
			r.log.WarnContext(ctx, "rebalance: donor bucket has no stock key in Redis (lost); transfer abandoned, warm the item from MySQL",
				"transfer_id", t.ID, "item_id", t.ItemID, "bucket", t.From)
		}
		return r.advance(ctx, t, abandonTransfer, store.TransferPlanned, store.TransferAbandoned)
	default:
		return driven{state: store.TransferPlanned}, fmt.Errorf("rebalance: transfer %d: out step answered %q", t.ID, out)
	}
	return r.reread(ctx, t, store.TransferPlanned)
}

// cutShort reports a transfer the MySQL step cut: Redis' donor held units
// MySQL's does not (a broken invariant, as a Redis failover without WAIT
// leaves), and was reconciled down to MySQL.
func (r *Rebalancer) cutShort(ctx context.Context, t store.Transfer, mv moved, cut cutResult) {
	r.m.Short.Inc()
	r.log.ErrorContext(ctx, "rebalance: Redis' donor bucket held units MySQL's does not (Redis above MySQL, e.g. after a failover without WAIT);"+
		" the transfer moved what MySQL has and the Redis donor was reconciled down to MySQL",
		"transfer_id", t.ID, "item_id", t.ItemID, "from", t.From, "to", t.To, "planned_qty", t.Qty, "moved_qty", mv.qty,
		"state", string(mv.state), "redis_donor_before", cut.before, "redis_donor_after", cut.after)
}

// stepIn gives the qty to the recipient in Redis and marks the transfer
// DONE.
func (r *Rebalancer) stepIn(ctx context.Context, t *store.Transfer) (driven, error) {
	in, err := transferIn(ctx, r.rdb, refOf(*t))
	if err != nil {
		return driven{state: store.TransferMoved}, err
	}
	if in == stepNoStock {
		r.log.WarnContext(ctx, "rebalance: recipient bucket has no stock key in Redis (lost); MySQL holds the units, warm the item from MySQL",
			"transfer_id", t.ID, "item_id", t.ItemID, "bucket", t.To)
	}
	return r.advance(ctx, t, completeTransfer, store.TransferMoved, store.TransferDone)
}

// advance moves t from state from to state to in MySQL with step (a
// compare-and-set of the row's state: abandonTransfer, completeTransfer).
// Won, t is in to and this drive moved it; lost, another drive moved it
// first, and t is read again (reread). A failed step leaves t in from.
func (r *Rebalancer) advance(ctx context.Context, t *store.Transfer, step func(context.Context, store.Querier, int64) (bool, error), from, to store.TransferState) (driven, error) {
	won, err := step(ctx, r.db, t.ID)
	if err != nil {
		return driven{state: from}, err
	}
	if won {
		t.State = to
		return driven{state: to, won: true}, nil
	}
	return r.reread(ctx, t, from)
}

// reread reads t again after this drive's CAS from was found stale, and
// returns the state another driver moved it to (t takes the row's state
// and qty).
func (r *Rebalancer) reread(ctx context.Context, t *store.Transfer, from store.TransferState) (driven, error) {
	cur, err := getTransfer(ctx, r.db, t.ID)
	if err != nil {
		return driven{state: from}, err
	}
	if cur.State == from {
		return driven{state: from}, fmt.Errorf("%w: transfer %d still %s", errNoProgress, t.ID, from)
	}
	*t = cur
	return driven{state: cur.State}, nil
}
