package waitroom

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// CloseRounds closes, in order, every round of item it whose end now (Redis'
// clock: no ticket can be taken into the round any more) has passed and
// that is not closed yet: it reads the round's tickets, which are final,
// and writes their Merkle root to queue_rounds (rounds_sql.go) before
// anyone can order them, since the round's seed is derived from that root.
// It returns the rounds closed so far.
//
// The gate calls it on each pass; a round is published within a pass of
// its end. Two gates at once write the same rows (the tickets are final),
// and the first write stands.
func CloseRounds(ctx context.Context, db store.Querier, wr *Store, it Item, now time.Time) ([]draw.Round, error) {
	closed, err := ClosedRounds(ctx, db, it.ID)
	if err != nil {
		return nil, err
	}
	n := rounds(it)
	if len(closed) == n || now.Before(roundEnd(it, len(closed))) {
		return closed, nil
	}
	tickets, err := wr.Tickets(ctx, it.ID)
	if err != nil {
		return nil, err
	}
	for k := len(closed); k < n && !now.Before(roundEnd(it, k)); k++ {
		first := int64(1)
		if k > 0 {
			first = closed[k-1].Last + 1
		}
		last := first - 1
		var in []draw.Entry
		for _, t := range tickets {
			if RoundOf(it, t.TakenAt) == k {
				in = append(in, draw.Entry{Ticket: draw.Hash(t.ID), Arrival: t.Arrival})
				last = max(last, t.Arrival)
			}
		}
		if int64(len(in)) != last-first+1 {
			// Arrival numbers follow Redis' clock, so a round's tickets
			// are a run of arrivals: a hole means the stores disagree
			// (tickets lost), and no root is written over a guess.
			return nil, fmt.Errorf("waitroom: round %d of item %d holds %d tickets over arrivals %d..%d: %w",
				k, it.ID, len(in), first, last, ErrMissing)
		}
		r, err := draw.CloseRound(k, first, last, in)
		if err != nil {
			return nil, fmt.Errorf("waitroom: round %d of item %d: %w", k, it.ID, err)
		}
		if err := saveRound(ctx, db, it.ID, r); err != nil {
			return nil, err
		}
		closed = append(closed, r)
	}
	// Read back what stands: another gate may have written first.
	return ClosedRounds(ctx, db, it.ID)
}

// admissible is how far the gate may admit in item it's line with closed
// rounds closed: to the last closed round's last arrival while a round is
// open (a ticket of an open round has no position yet), every ticket once
// all rounds are closed (-1: no bound).
func admissible(it Item, closed []draw.Round) int64 {
	if len(closed) == rounds(it) {
		return -1
	}
	if len(closed) == 0 {
		return 0
	}
	return closed[len(closed)-1].Last
}
