package waitroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// ErrMissing is a ticket of a closed round that the drawn order does not
// hold: the stores disagree, and no position can be told.
var ErrMissing = errors.New("waitroom: a ticket of a closed round is missing from the order")

// ErrRoundOpen is a ticket whose round has not closed yet (or whose close
// this replica has not read yet): it has no place in line until then.
var ErrRoundOpen = errors.New("waitroom: the ticket's round is still open")

// Positions keeps, per item, the serving positions of its tickets drawn
// in rounds (ServingLine), for a second, as the Room's item views do,
// because a round's close may be published a moment after a poll asks.
// One draw per item at a time, whatever the number of polls asking
// (singleflight).
type Positions struct {
	db      store.Querier
	wr      *Store
	timeout time.Duration

	flights singleflight.Group
	mu      sync.Mutex
	m       map[int64]drawnOrder
}

type drawnOrder struct {
	drawnAt time.Time
	closed  int              // the rounds closed when it was drawn
	bound   int64            // the closed rounds' last position while a round is open, -1 once none is
	pos     map[string]int64 // ticket id -> position, tickets of closed rounds only
	rounds  []roundTree      // the closed rounds' trees, for inclusion proofs
}

// NewPositions returns Positions over db and wr, each draw within timeout.
func NewPositions(db store.Querier, wr *Store, timeout time.Duration) *Positions {
	return &Positions{db: db, wr: wr, timeout: timeout, m: map[int64]drawnOrder{}}
}

// Position is t's place in item it's serving order: its rank in its
// round's draw, after every earlier round, or its arrival number for a
// ticket taken after the shuffle window (every round is ahead of it, and
// the late ones in arrival order). Errors: ErrRoundOpen, the draw's (a
// store unavailable), ErrMissing, or ctx's.
func (p *Positions) Position(ctx context.Context, it Item, t Ticket) (int64, error) {
	k := RoundOf(it, t.TakenAt)
	if k == Late {
		return t.Arrival, nil
	}
	d, err := p.drawn(ctx, it, k)
	if err != nil {
		return 0, err
	}
	if n := d.pos[t.ID]; n > 0 {
		return n, nil
	}
	if k >= d.closed {
		return 0, fmt.Errorf("%w: item %d, round %d", ErrRoundOpen, it.ID, k)
	}
	return 0, fmt.Errorf("%w: item %d, ticket %s", ErrMissing, it.ID, t.ID)
}

// drawn is item it's drawn order, drawn again when it is a second old, or
// when round k, closed by now, was still open when it was drawn.
func (p *Positions) drawn(ctx context.Context, it Item, k int) (drawnOrder, error) {
	p.mu.Lock()
	d, ok := p.m[it.ID]
	p.mu.Unlock()
	now := time.Now()
	age := now.Sub(d.drawnAt)
	if !ok || age > time.Second || (k >= d.closed && !now.Before(roundEnd(it, k)) && age > roundRetry) {
		ch := p.flights.DoChan(strconv.FormatInt(it.ID, 10), func() (any, error) {
			return p.draw(context.WithoutCancel(ctx), it)
		})
		select {
		case res := <-ch:
			if res.Err != nil {
				return drawnOrder{}, fmt.Errorf("waitroom: draw the order of %d: %w", it.ID, res.Err)
			}
			d = res.Val.(drawnOrder)
		case <-ctx.Done():
			return drawnOrder{}, ctx.Err()
		}
	}
	return d, nil
}

// roundRetry is how soon a draw is made again for a round that has ended
// but whose close the last draw did not see yet (the gate publishes it
// within a pass).
const roundRetry = 100 * time.Millisecond

// draw orders the item's tickets and keeps the positions of those drawn in
// rounds, with each closed round's tree for the proofs.
func (p *Positions) draw(ctx context.Context, it Item) (drawnOrder, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	l, err := drawLine(ctx, p.db, p.wr, it)
	if err != nil {
		return drawnOrder{}, err
	}
	d := drawnOrder{drawnAt: time.Now(), closed: len(l.closed), pos: make(map[string]int64, len(l.tickets)), bound: -1}
	var last int64
	if len(l.closed) > 0 {
		last = l.closed[len(l.closed)-1].Last
	}
	if len(l.closed) < rounds(it) {
		d.bound = last
	}
	for i, t := range l.tickets {
		if t.Arrival <= last {
			d.pos[t.ID] = int64(i + 1)
		}
	}
	if d.rounds, err = roundTrees(l); err != nil {
		return drawnOrder{}, err
	}
	p.mu.Lock()
	p.m[it.ID] = d
	p.mu.Unlock()
	return d, nil
}

// Ahead is how many positions the rounds before round k of item it hold
// (0 for the first round): the last arrival of round k-1 once it is closed
// and drawn, ErrRoundOpen before. A ticket of round k is drawn behind them.
func (p *Positions) Ahead(ctx context.Context, it Item, k int) (int64, error) {
	if k == 0 {
		return 0, nil
	}
	if k < 0 {
		return 0, fmt.Errorf("waitroom: item %d: round %d is no round of the window", it.ID, k)
	}
	d, err := p.drawn(ctx, it, k-1)
	if err != nil {
		return 0, err
	}
	if d.closed < k || len(d.rounds) < k {
		return 0, fmt.Errorf("%w: item %d, round %d", ErrRoundOpen, it.ID, k-1)
	}
	return d.rounds[k-1].round.Last, nil
}

// Bound is where item id's gate stops while a round of its shuffle window
// is open (the closed rounds' last position, 0 before the first close), as
// this replica last drew the order: ok false when it has not drawn it, or
// every round was closed then. It reads no store: the draw may be up to a
// second old, so a bound below the gate's position is an old one.
func (p *Positions) Bound(id int64) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d, ok := p.m[id]
	if !ok || d.bound < 0 {
		return 0, false
	}
	return d.bound, true
}

// Proof is t's inclusion proof in its round, once the round is closed and
// drawn (found false before, and for a ticket after the window, which no
// round holds).
func (p *Positions) Proof(ctx context.Context, it Item, t Ticket) (*api.InclusionProof, bool, error) {
	k := RoundOf(it, t.TakenAt)
	if k == Late {
		return nil, false, nil
	}
	d, err := p.drawn(ctx, it, k)
	if err != nil || k >= len(d.rounds) {
		return nil, false, err
	}
	pr, ok := d.rounds[k].proof(t.ID)
	return pr, ok, nil
}
