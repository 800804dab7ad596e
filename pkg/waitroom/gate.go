package waitroom

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/lease"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// GateLeaseKey is the gate's lease (GateConfig.LeaseKey's default).
func GateLeaseKey() string { return stock.Root() + "queue:gate:lease" }

// itemsTTL is how long the list of queued items is reused: one MySQL query
// every few seconds, not every pass. A rate changed by an admin is seen
// within it.
const itemsTTL = 2 * time.Second

// GateConfig is what one gate needs; a zero field takes its default.
type GateConfig struct {
	// Interval is the pause between passes (default 100ms).
	Interval time.Duration
	// Lease is the gate lease's TTL, renewed every pass (default 1s).
	Lease time.Duration
	// LeaseKey is the lease's key (default GateLeaseKey; tests use their own).
	LeaseKey string
	// StoreTimeout bounds one MySQL query or Redis call (default 2s).
	StoreTimeout time.Duration
	// Holder names this replica in the lease (default lease.Holder()).
	Holder string
	// ClaimWindow is how long a waitlist offer holds its unit (default
	// 1m; waitlist.go).
	ClaimWindow time.Duration
	// MaxInFlight, above 0, holds an item's gate while that many of its
	// orders are reserved and not yet written (config.Gate.MaxInFlight).
	MaxInFlight int
	// Mover moves a bucketed item's released units between its buckets'
	// pools, for an offer to a buyer of another bucket (pkg/rebalance's
	// waitlist transfers; the reaper's main wires its Rebalancer). Nil: each
	// bucket's units are offered to its own buyers only
	// (gate_offers_buckets.go).
	Mover PoolMover
}

func (c GateConfig) withDefaults() GateConfig {
	if c.Interval <= 0 {
		c.Interval = 100 * time.Millisecond
	}
	if c.Lease <= 0 {
		c.Lease = time.Second
	}
	if c.LeaseKey == "" {
		c.LeaseKey = GateLeaseKey()
	}
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = 2 * time.Second
	}
	if c.Holder == "" {
		c.Holder = lease.Holder()
	}
	if c.ClaimWindow <= 0 {
		c.ClaimWindow = defaultClaimWindow
	}
	return c
}

// Gate admits queued items' tickets at their rates. Passes of one Gate
// never overlap.
type Gate struct {
	cfg GateConfig
	db  *sql.DB
	rdb redis.UniversalClient
	st  *stock.Store // the ledger: orders in flight
	wr  *Store       // the waiting room's own keys
	m   *GateMetrics
	log *slog.Logger
	// now is the gate's clock for the items' sale windows (time.Now); a
	// test sets it, with the Store's (Store.WithClock), to step the
	// gate's time instead of waiting on it (export_test.go).
	now func() time.Time

	items   []Item
	itemsAt time.Time
	lines   map[int64]line         // the items' serving orders (gate_offers.go)
	rounds  map[int64][]draw.Round // the items' closed rounds (closeRounds)
}

// NewGate returns a gate on db and rdb; it makes no call until Run or Pass.
func NewGate(cfg GateConfig, db *sql.DB, rdb redis.UniversalClient, m *GateMetrics, log *slog.Logger) *Gate {
	st := stock.New(rdb)
	return &Gate{cfg: cfg.withDefaults(), db: db, rdb: rdb, st: st, wr: NewStore(st), m: m, log: log, now: time.Now, lines: map[int64]line{}, rounds: map[int64][]draw.Round{}}
}

// Run passes every Interval until ctx is done, then gives the lease up so
// another replica takes over at once rather than after its TTL.
//
// First it names its deployment in its lease value and refuses to start
// (ErrLeaseClash) while another deployment's gate holds the lease.
func (g *Gate) Run(ctx context.Context) error {
	if err := g.identify(ctx); err != nil {
		return err
	}
	t := time.NewTicker(g.cfg.Interval)
	defer t.Stop()
	var failing bool
	for {
		if err := g.Pass(ctx); err != nil && ctx.Err() == nil {
			g.m.PassFailures.Inc()
			if !failing { // one line per outage, not one per pass
				g.log.Warn("gate: pass failed; admissions resume when it works again", "err", err)
			}
			failing = true
		} else if failing && err == nil {
			g.log.Info("gate: passes work again")
			failing = false
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.StoreTimeout)
			if err := lease.Drop(dctx, g.rdb, g.cfg.LeaseKey, g.cfg.Holder); err != nil {
				g.log.Warn("gate: could not give the lease up", "err", err)
			}
			cancel()
			g.m.Held.Set(0)
			g.m.Waiting.Set(0)
			return nil
		case <-t.C:
		}
	}
}

// Pass takes or renews the lease and, holding it, moves every live queued
// item's serving position on. Errors of one item do not stop the others.
func (g *Gate) Pass(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Lease)
	defer cancel()
	held, err := g.hold(ctx)
	if err != nil || !held {
		g.m.Held.Set(0)
		g.m.Waiting.Set(0)
		return err
	}
	g.m.Held.Set(1)
	items, err := g.list(ctx)
	if err != nil {
		return err
	}
	var waiting int64
	var errs []error
	now := g.now()
	for _, it := range items {
		if now.Before(it.StartsAt) {
			continue // nothing moves before the start (the script checks too)
		}
		st, err := g.advance(ctx, it)
		if errors.Is(err, ErrNotWarmed) {
			continue // not in Redis (yet): nobody can hold a ticket of it
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("gate: item %d: %w", it.ID, err))
			continue
		}
		g.m.Admitted.Add(float64(st.Advanced))
		if now.Before(it.EndsAt) {
			waiting += max(st.Tickets-st.Serving, 0)
		}
		if err := g.waitlist(ctx, it, st); err != nil {
			errs = append(errs, fmt.Errorf("gate: item %d: %w", it.ID, err))
		}
	}
	g.m.Waiting.Set(float64(waiting))
	return errors.Join(errs...)
}

func (g *Gate) hold(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	return lease.Hold(ctx, g.rdb, g.cfg.LeaseKey, g.cfg.Holder, g.cfg.Lease)
}

// advance moves item it's serving position on at its rate, unless the
// pipeline's headroom is used up: with MaxInFlight set and that many of
// the item's orders reserved and not yet written, the gate holds (nothing
// admitted, no time banked), so admissions follow what the consumers
// commit. Orders follow admissions late (a buyer orders after seeing the
// admission), so the bound is on the pipeline's backlog, not on tickets.
func (g *Gate) advance(ctx context.Context, it Item) (GateState, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	// Rounds close whether or not the pipeline has room: a round's root is
	// published at its end, not when admissions resume.
	closed, err := g.closeRounds(ctx, it)
	if err != nil {
		return GateState{}, err
	}
	if now := g.now(); g.cfg.MaxInFlight > 0 && !now.Before(it.StartsAt) && now.Before(it.EndsAt) {
		n, err := g.st.InFlight(ctx, it.ID, it.Buckets)
		if err != nil {
			return GateState{}, err
		}
		if n >= int64(g.cfg.MaxInFlight) {
			g.m.HeldBack.Inc()
			return g.wr.HoldGate(ctx, it.ID)
		}
	}
	return g.wr.AdvanceGate(ctx, it.ID, it.QueueRate, admissible(it, closed))
}

// closeRounds is item it's closed rounds, closing those whose end Redis'
// clock has passed (CloseRounds). Once every round is closed the answer is
// kept: nothing about them changes again.
func (g *Gate) closeRounds(ctx context.Context, it Item) ([]draw.Round, error) {
	if c, ok := g.rounds[it.ID]; ok && len(c) == rounds(it) {
		return c, nil
	}
	now, err := g.wr.Now(ctx)
	if err != nil {
		return nil, err
	}
	closed, err := CloseRounds(ctx, g.db, g.wr, it, now)
	if err != nil {
		return nil, err
	}
	g.rounds[it.ID] = closed
	return closed, nil
}

// endedGrace is how long after its end a queued item is still passed: its
// waitlist gives what it holds back to the stock once the sale is over.
const endedGrace = time.Minute

// list is the live queued items (and those ended within endedGrace), read
// again every itemsTTL.
func (g *Gate) list(ctx context.Context) ([]Item, error) {
	if g.items != nil && time.Since(g.itemsAt) < itemsTTL {
		return g.items, nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	items, err := LiveQueuedItems(ctx, g.db, g.now().Add(-endedGrace))
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []Item{}
	}
	g.items, g.itemsAt = items, time.Now()
	for id := range g.lines {
		if !slices.ContainsFunc(items, func(it Item) bool { return it.ID == id }) {
			delete(g.lines, id)
		}
	}
	for id := range g.rounds {
		if !slices.ContainsFunc(items, func(it Item) bool { return it.ID == id }) {
			delete(g.rounds, id)
		}
	}
	return items, nil
}

// identify reads this gate's deployment from its database (trying again
// every interval while MySQL is away), makes it part of the gate's lease
// value, and checks that no other deployment's gate holds the lease.
func (g *Gate) identify(ctx context.Context) error {
	var warned bool // one line per outage, not one per interval
	for {
		qctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
		dep, err := deploymentOf(qctx, g.db)
		cancel()
		if err == nil {
			g.cfg.Holder += holderOf + dep
			err := checkLease(ctx, g.rdb, g.cfg.LeaseKey, dep, g.cfg.Lease)
			if err != nil && !errors.Is(err, ErrLeaseClash) {
				// Redis unreadable: the passes will say so; a clash is
				// checked again at the next start.
				g.log.Warn("gate: could not check the lease's holder", "err", err)
				return nil
			}
			return err
		}
		if !warned {
			g.log.Warn("gate: cannot read this deployment's name yet; the gate starts once it can", "err", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(g.cfg.Interval):
		}
	}
}
