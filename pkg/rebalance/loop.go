package rebalance

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/lease"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Config is what one rebalancer needs; main fills it from config.Rebalance
// and config.Common. A zero field takes its default (withDefaults).
type Config struct {
	// Interval is the pause between the end of one pass and the start of
	// the next.
	Interval time.Duration
	// PassTimeout bounds one pass (checked between transfers: a transfer
	// under way is driven to its end, within transferCalls store calls;
	// default 5s).
	PassTimeout time.Duration
	// Lease, when above 0, lets only the replica holding the Redis lease
	// pass; the others look again every Interval.
	Lease time.Duration
	// LeaseKey is the lease's Redis key (default RebalanceLease;
	// tests sharing one Redis use keys of their own).
	LeaseKey string
	// StoreTimeout bounds one MySQL statement or Redis call (default 2s).
	StoreTimeout time.Duration
	// Holder names this replica in the lease (default: host, pid and a
	// random suffix).
	Holder string
	// ResumePage is how many open transfers a pass drives first, oldest
	// first (default 100).
	ResumePage int
}

// withDefaults is cfg with every unset field at its default: the one place
// the defaults are.
func (cfg Config) withDefaults() Config {
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = 2 * time.Second
	}
	if cfg.PassTimeout <= 0 {
		cfg.PassTimeout = 5 * time.Second
	}
	if cfg.ResumePage <= 0 {
		cfg.ResumePage = 100
	}
	if cfg.LeaseKey == "" {
		cfg.LeaseKey = RebalanceLease()
	}
	if cfg.Holder == "" {
		cfg.Holder = lease.Holder()
	}
	return cfg
}

// Deps are the stores a rebalancer moves stock in: MySQL's item_buckets
// and stock_transfers, and Redis' bucket keys, on which it runs its own
// scripts (lua/).
type Deps struct {
	DB    *sql.DB
	Redis redis.UniversalClient
}

// itemsTTL is how long the list of items to look after is reused: one
// MySQL query every few seconds, not every pass. windowMargin widens the
// sale windows the list is chosen by, so a sale that opens is listed
// already, and one that just closed is still tidied.
const (
	itemsTTL     = 2 * time.Second
	windowMargin = time.Minute
)

// transferCalls is how many store timeouts one drive of a transfer may
// take: up to eight calls (SADD, out, move, in, done, the guards' TTLs,
// the MULTI, a re-read).
const transferCalls = 8

// Rebalancer moves stock between buckets in passes. Passes of one
// Rebalancer never overlap; any number of replicas may run at once.
type Rebalancer struct {
	db  *sql.DB
	rdb redis.UniversalClient
	log *slog.Logger
	m   *Metrics
	cfg Config
	now func() time.Time

	items   []bucketedItem
	itemsAt time.Time
	// prev is, per item, the stocks the last pass expected to leave behind
	// (Plan's drop detection).
	prev map[int64][]int64

	logMu  sync.Mutex
	logged map[string]time.Time // errorEvery's memory
}

// New returns a Rebalancer on deps' stores, cfg's unset fields at their
// defaults (withDefaults). It makes no call; Run does.
func New(cfg Config, deps Deps, m *Metrics, log *slog.Logger) *Rebalancer {
	return &Rebalancer{db: deps.DB, rdb: deps.Redis, log: log, m: m, cfg: cfg.withDefaults(), now: time.Now,
		prev: map[int64][]int64{}, logged: map[string]time.Time{}}
}

// Run passes until ctx is done: the first at once, then Interval after each
// ends, or as soon as an ingress names an item on stock.RebalanceWake (a
// buyer started waiting for a bucket's stock; wake.go), but never
// closer than minPassGap after the last. A failed pass is logged and
// counted, never fatal. On shutdown it gives the lease up, so another
// replica takes over at once.
func (r *Rebalancer) Run(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	if err := loadScripts(lctx, r.rdb); err != nil {
		r.log.Warn("rebalance: could not load the scripts; each loads on its first run", "err", err)
	}
	cancel()
	t := time.NewTimer(0)
	defer t.Stop()
	woken := r.listen(ctx)
	var ended time.Time
	for {
		select {
		case <-ctx.Done():
		case <-t.C:
		case item := <-woken:
			t.Stop() // (Go 1.23 timers: no stale tick after Stop)
			if !r.listed(item) {
				r.forgetItems() // a new item: list it now, not up to itemsTTL later
			}
			if gap := minPassGap - time.Since(ended); gap > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(gap):
				}
			}
		}
		select {
		case <-ctx.Done():
			if r.cfg.Lease > 0 {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StoreTimeout)
				if err := lease.Drop(dctx, r.rdb, r.cfg.LeaseKey, r.cfg.Holder); err != nil {
					r.log.Warn("rebalance: could not give the lease up", "err", err)
				}
				cancel()
				r.m.LeaseHeld.Set(0)
			}
			return nil
		default:
		}
		if err := r.Pass(ctx); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				r.log.Info("rebalance pass stopped by shutdown", "err", err)
			} else {
				r.m.PassFailures.Inc()
				r.errorEvery(err.Error(), "rebalance pass failed; retrying next interval", "err", err)
			}
		}
		ended = time.Now()
		t.Reset(r.cfg.Interval)
	}
}

// repeatLogEvery is how often the same error is logged again: a transfer
// stuck on a broken invariant fails every pass, ten times a second.
const repeatLogEvery = 10 * time.Second

// errorEvery logs msg at error level unless key was logged within
// repeatLogEvery (the metrics still count every failure).
func (r *Rebalancer) errorEvery(key, msg string, args ...any) {
	now := time.Now()
	r.logMu.Lock()
	last, seen := r.logged[key]
	if !seen || now.Sub(last) >= repeatLogEvery {
		r.logged[key] = now
	}
	if len(r.logged) > 1000 {
		for k, at := range r.logged {
			if now.Sub(at) >= repeatLogEvery {
				delete(r.logged, k)
			}
		}
	}
	r.logMu.Unlock()
	if !seen || now.Sub(last) >= repeatLogEvery {
		r.log.Error(msg, args...)
	}
}

// Pass runs one pass: without the lease (when one is configured) nothing;
// else every open transfer is driven to its end, then each listed item's
// buckets are looked at and the policy's moves made. Errors of one item do
// not stop the others; they are joined.
func (r *Rebalancer) Pass(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PassTimeout)
	defer cancel()
	if r.cfg.Lease > 0 {
		held, err := lease.Hold(ctx, r.rdb, r.cfg.LeaseKey, r.cfg.Holder, r.cfg.Lease)
		if err != nil {
			r.m.LeaseHeld.Set(0)
			return err
		}
		if !held {
			r.m.LeaseHeld.Set(0)
			return nil
		}
		r.m.LeaseHeld.Set(1)
	}
	start := time.Now()
	defer func() { r.m.PassDuration.Observe(time.Since(start).Seconds()) }()

	var errs []error
	open, err := r.resume(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	items, err := r.listItems(ctx)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := r.rebalanceItem(ctx, it, open); err != nil {
			errs = append(errs, fmt.Errorf("rebalance: item %d: %w", it.ID, err))
		}
	}
	return errors.Join(errs...)
}

// resume drives the oldest open transfers to their end and returns the ids
// it found open (the live-set sweep leaves those alone).
func (r *Rebalancer) resume(ctx context.Context) (map[int64]bool, error) {
	qctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	ts, err := openTransfers(qctx, r.db, r.cfg.ResumePage)
	cancel()
	if err != nil {
		return nil, err
	}
	open := make(map[int64]bool, len(ts))
	for _, t := range ts {
		open[t.ID] = true
	}
	return open, r.finishOpen(ctx, ts)
}

// finishOpen drives open transfers ts (found by a pass, or by ResumePool)
// to their end, one after the other until ctx is done, counting and
// logging those this call finished.
func (r *Rebalancer) finishOpen(ctx context.Context, ts []store.Transfer) error {
	var errs []error
	for _, t := range ts {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		d, err := r.run(ctx, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if d.won {
			r.m.Resumed.Inc()
			r.log.Info("rebalance: resumed an open transfer", "transfer_id", t.ID, "item_id", t.ItemID, "kind", string(t.Kind),
				"from_state", string(t.State), "state", string(d.state))
		}
	}
	return errors.Join(errs...)
}

// run drives t with a context of its own: detached from the pass's end and
// from shutdown, bounded by transferCalls store timeouts.
func (r *Rebalancer) run(ctx context.Context, t store.Transfer) (driven, error) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), transferCalls*r.cfg.StoreTimeout)
	defer cancel()
	d, err := r.drive(dctx, t)
	if err != nil {
		r.m.Failed.Inc()
		return d, fmt.Errorf("rebalance: transfer %d (item %d, %d->%d, qty %d) stopped %s: %w",
			t.ID, t.ItemID, t.From, t.To, t.Qty, d.state, err)
	}
	if d.won && d.state == store.TransferDone {
		r.m.Units.Add(float64(d.qty)) // what moved: a cut transfer moved less than t.Qty
	}
	return d, nil
}

// listItems returns the bucketed items to look after, read from MySQL at
// most every itemsTTL.
func (r *Rebalancer) listItems(ctx context.Context) ([]bucketedItem, error) {
	now := r.now()
	if r.items != nil && now.Sub(r.itemsAt) < itemsTTL {
		return r.items, nil
	}
	qctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	defer cancel()
	items, err := queryItems(qctx, r.db, now, windowMargin)
	if err != nil {
		return nil, err
	}
	listed := make(map[int64]bool, len(items))
	for _, it := range items {
		listed[it.ID] = true
	}
	for id := range r.prev {
		if !listed[id] {
			delete(r.prev, id)
		}
	}
	if items == nil {
		items = []bucketedItem{}
	}
	r.items, r.itemsAt = items, now
	return items, nil
}

// forgetItems makes the next pass list the items again (a bucket count
// changed under a plan).
func (r *Rebalancer) forgetItems() { r.items = nil }

// rebalanceItem finishes the item's live transfers MySQL says are final,
// then plans and drives this pass's moves.
func (r *Rebalancer) rebalanceItem(ctx context.Context, it bucketedItem, open map[int64]bool) error {
	vctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	v, err := readView(vctx, r.rdb, it.ID, it.Buckets)
	cancel()
	if err != nil {
		return err
	}
	var errs []error
	if err := r.sweepLive(ctx, it.ID, v.live, open); err != nil {
		errs = append(errs, err)
	}
	if v.buckets != it.Buckets {
		// Not warmed, or re-bucketed in MySQL and not yet warmed: Redis'
		// buckets are not the rows a transfer would move.
		delete(r.prev, it.ID)
		return errors.Join(errs...)
	}
	prev := r.prev[it.ID]
	if len(prev) != it.Buckets {
		prev = nil
	}
	moves := Plan(v.stocks, v.want, v.need, prev)
	made, err := r.moveAll(ctx, it, moves)
	if err != nil {
		errs = append(errs, err)
	}
	r.prev[it.ID] = after(v.stocks, made)
	return errors.Join(errs...)
}

// sweepLive finishes the ids in the item's TransfersLive whose transfer is
// final in MySQL (a mover died after the last state change and before the
// SREM), and forgets ids MySQL does not know. While such an id stays, no
// bucketview.Snapshot is consistent, so the ingress never answers "sold
// out" for the item. Ids open in MySQL are left to their drivers.
func (r *Rebalancer) sweepLive(ctx context.Context, itemID int64, live []int64, open map[int64]bool) error {
	var errs []error
	for _, id := range live {
		if open[id] {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*r.cfg.StoreTimeout)
		t, err := getTransfer(cctx, r.db, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r.log.Warn("rebalance: a live transfer MySQL does not know; forgotten", "transfer_id", id, "item_id", itemID)
			err = forgetTransfer(cctx, r.rdb, itemID, id)
		case err == nil && t.ItemID != itemID:
			err = fmt.Errorf("rebalance: live transfer %d of item %d belongs to item %d", id, itemID, t.ItemID)
		case err == nil && !t.State.Open():
			_, err = r.drive(cctx, t)
		}
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RebalanceLease is the key whose holder is the one reaper replica that
// rebalances (Config.LeaseKey's default). It only saves work: transfers are
// safe with any number of movers.
func RebalanceLease() string { return stock.Root() + "rebalance:lease" }
