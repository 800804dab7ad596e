package waitroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// ErrMissing is a ticket taken before starts_at that the drawn order does
// not hold: the stores disagree, and no position can be told.
var ErrMissing = errors.New("waitroom: a ticket taken before starts_at is missing from the order")

// Positions keeps, per item, the serving positions of its tickets taken
// before starts_at (ServingLine), for a second, as the ingress's item
// cache does, because a ticket taken just before starts_at by Redis' clock
// may be read a moment after this replica's. One draw per item at a time,
// whatever the number of polls asking (singleflight).
type Positions struct {
	db      store.Querier
	wr      *Store
	timeout time.Duration

	flights singleflight.Group
	mu      sync.Mutex
	m       map[int64]drawnOrder
}

type drawnOrder struct {
	expires time.Time
	pos     map[string]int64 // ticket id -> position, early tickets only
}

// NewPositions returns Positions over db and wr, each draw within timeout.
func NewPositions(db store.Querier, wr *Store, timeout time.Duration) *Positions {
	return &Positions{db: db, wr: wr, timeout: timeout, m: map[int64]drawnOrder{}}
}

// Position is t's place in item it's serving order: its rank among the
// shuffled tickets, or its arrival number for a ticket taken after
// starts_at (every shuffled ticket is ahead of it, and the late ones in
// arrival order). Errors: the draw's (a store unavailable), ErrMissing, or
// ctx's.
func (p *Positions) Position(ctx context.Context, it store.Item, t Ticket) (int64, error) {
	if !early(t, it.StartsAt) {
		return t.Arrival, nil
	}
	p.mu.Lock()
	d, ok := p.m[it.ID]
	p.mu.Unlock()
	if !ok || time.Now().After(d.expires) || d.pos[t.ID] == 0 {
		ch := p.flights.DoChan(strconv.FormatInt(it.ID, 10), func() (any, error) {
			return p.draw(context.WithoutCancel(ctx), it)
		})
		select {
		case res := <-ch:
			if res.Err != nil {
				return 0, fmt.Errorf("waitroom: draw the order of %d: %w", it.ID, res.Err)
			}
			d = res.Val.(drawnOrder)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if n := d.pos[t.ID]; n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("%w: item %d, ticket %s", ErrMissing, it.ID, t.ID)
}

// draw orders the item's tickets and keeps the early ones' positions.
func (p *Positions) draw(ctx context.Context, it store.Item) (drawnOrder, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	line, err := ServingLine(ctx, p.db, p.wr, it)
	if err != nil {
		return drawnOrder{}, err
	}
	d := drawnOrder{expires: time.Now().Add(time.Second), pos: make(map[string]int64, len(line))}
	for i, t := range line {
		if !early(t, it.StartsAt) {
			break // the late ones follow in arrival order: position = arrival
		}
		d.pos[t.ID] = int64(i + 1)
	}
	p.mu.Lock()
	p.m[it.ID] = d
	p.mu.Unlock()
	return d, nil
}
