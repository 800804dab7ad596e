package reap

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// sweepOrphans looks at every item's pending reservations and resolves the
// ones older than OrphanGrace through the arbiter.
//
// Age is judged against the Redis server's TIME, not this host's clock:
// every reaper replica then uses one clock, and a reaper host running ahead
// cannot void a reservation early. The reservation's own timestamp is Redis'
// TIME too (admit.lua stamps it), so age is measured on one clock and no host
// clock enters it; a Redis failover to a replica whose clock differs is the
// one way it can shift, by that skew, against a grace of minutes.
// Even an early void would break no invariant (the arbiter makes the
// consumer drop the message), only disappoint a buyer; the grace guards that.
//
// It reads every item MySQL lists, two Redis calls each, so it runs every
// OrphanSweepEvery (a tenth of the grace), not every pass: the local stack's
// 9,000 items at a 1 s interval cost 19% of a core in the reaper and 23% in
// Redis during a 1,000-item sale (CPU split of one bench run).
//
// The items are MySQL's, plus (with SweepUnknownItems), every
// unknownScanEvery, those Redis holds
// reservations of although MySQL has no such item (an item whose creation
// never committed, or a database reset under a live Redis): nothing else
// would ever decide them.
func (r *Reaper) sweepOrphans(ctx context.Context) (err error) {
	now, err := r.redisNow(ctx)
	if err != nil {
		return err
	}
	if !r.lastSweep.IsZero() && now.Sub(r.lastSweep) < r.cfg.OrphanSweepEvery {
		return nil
	}
	cctx, cancel := r.callCtx(ctx, 1)
	items, err := store.ListItemIDs(cctx, r.db)
	cancel()
	if err != nil {
		return err
	}
	var errs []error
	unknown, err := r.unknownItems(ctx, items, now)
	if err != nil {
		errs = append(errs, err)
	}
	items = append(items, unknown...)
	cutoff := now.Add(-r.cfg.OrphanGrace)
	// A sweep that fails part way is done again at the next pass; one that
	// read every item waits OrphanSweepEvery.
	defer func() {
		if err == nil {
			r.lastSweep = now
		}
	}()
	for _, item := range items {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		var old []stock.Reservation
		cctx, cancel := r.callCtx(ctx, txCalls)
		err := r.stock.ScanReservations(cctx, item, func(res stock.Reservation) error {
			if !res.ReservedAt.After(cutoff) {
				old = append(old, res)
			}
			return nil
		})
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("item %d: %w", item, err))
			if errors.Is(err, stock.ErrUnavailable) {
				break // Redis is down: the other items would only time out too
			}
			continue
		}
		for _, res := range old {
			if err := r.resolveOrphan(ctx, item, res); err != nil {
				errs = append(errs, fmt.Errorf("item %d request %s: %w", item, res.RequestID, err))
				if !errors.Is(err, ErrUnknownDecision) {
					break // a store is failing; the next pass picks the rest up
				}
			}
		}
	}
	return errors.Join(errs...)
}

// unknownScanEvery is how often, at most, the sweep asks Redis for
// reservations of items MySQL does not list: a pipeline of one existence
// check per item ever warmed, so not every pass, yet often enough that such
// an orphan waits little more than the grace.
func (r *Reaper) unknownScanEvery() time.Duration { return min(r.cfg.OrphanGrace/4, time.Minute) }

// unknownItems returns the items with Redis reservations that are not among
// known, or nothing when the last scan (by Redis' clock now) is recent.
func (r *Reaper) unknownItems(ctx context.Context, known []int64, now time.Time) ([]int64, error) {
	if !r.cfg.SweepUnknownItems || !r.lastUnknownScan.IsZero() && now.Sub(r.lastUnknownScan) < r.unknownScanEvery() {
		return nil, nil
	}
	cctx, cancel := r.callCtx(ctx, unknownScanCalls)
	reserved, err := reservedItems(cctx, r.stock)
	cancel()
	if err != nil {
		return nil, err
	}
	r.lastUnknownScan = now
	isKnown := make(map[int64]bool, len(known))
	for _, id := range known {
		isKnown[id] = true
	}
	var out []int64
	for _, id := range reserved {
		if !isKnown[id] {
			r.log.Warn("reservations of an item MySQL does not have; voiding them after the grace", "item_id", id)
			out = append(out, id)
		}
	}
	return out, nil
}

// unknownScanCalls bounds one read of the warmed-items registry and its
// existence checks, in StoreTimeouts.
const unknownScanCalls = 30

func (r *Reaper) redisNow(ctx context.Context) (time.Time, error) {
	cctx, cancel := r.callCtx(ctx, 1)
	defer cancel()
	now, err := r.stock.Client().Time(cctx).Result()
	if err != nil {
		return time.Time{}, fmt.Errorf("redis TIME: %w: %w", stock.ErrUnavailable, err)
	}
	return now, nil
}

// resolveOrphan asks the arbiter to void the request; whether or not that
// insert wins, the reservation is then compensated as the winning decision
// says (see compensationFor). The buyer's cached status is written before
// the release, so a failure in between leaves the reservation in place and
// the next pass retries both.
func (r *Reaper) resolveOrphan(ctx context.Context, item int64, res stock.Reservation) error {
	cctx, cancel := r.callCtx(ctx, 3)
	defer cancel()
	won, d, err := store.Decide(cctx, r.db, store.Decision{
		RequestID: res.RequestID, ItemID: item, UserID: res.UserID, Qty: res.Qty,
		Outcome: store.Voided, Reason: store.ReasonExpiredReservation,
	})
	if err != nil {
		return err
	}
	if won {
		r.m.OrphansVoided.Inc()
		r.log.Info("voided orphaned reservation", "item_id", item, "request_id", res.RequestID,
			"reserved_at", res.ReservedAt, "grace", r.cfg.OrphanGrace.String())
	}
	comp, err := compensationFor(d)
	if err != nil {
		r.log.Error("leaving reservation alone", "item_id", item, "request_id", res.RequestID, "err", err)
		return err
	}
	if comp.settle {
		return r.settleOrdered(cctx, item, res)
	}
	if err := orderstatus.Put(cctx, r.stock, orderstatus.FromDecision(d)); err != nil {
		return err
	}
	if _, err := r.stock.Release(cctx, item, res.RequestID, comp.release); err != nil {
		return err
	}
	return nil
}

// settleOrdered finishes an ORDERED request whose consumer died between its
// commit and its Redis step: the reservation is dropped (the stock stays
// taken: it is the order's) and the order's status is cached, since with the
// reservation gone nothing else would tell a poller it is no longer pending.
// The cache never moves backwards, so an order already PAID or CANCELLED
// keeps that view.
func (r *Reaper) settleOrdered(ctx context.Context, item int64, res stock.Reservation) error {
	if err := r.stock.Settle(ctx, item, []string{res.RequestID}); err != nil {
		return err
	}
	o, err := store.OrderOfRequest(ctx, r.db, res.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		// ORDERED without an order breaks I4; the audit reports it. Nothing
		// here can repair it, so do not fail every later pass over it.
		r.log.Error("ORDERED request has no order", "item_id", item, "request_id", res.RequestID)
		return nil
	}
	if err != nil {
		return err
	}
	return orderstatus.Put(ctx, r.stock, orderstatus.FromOrder(o))
}
