package waitroom

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// ServingLine is item it's tickets in serving order (docs/fairness.md),
// drawn from its seed and closed rounds (MySQL) and its tickets (Redis) by
// draw.LineRounds: each closed round's tickets by rank under the round's
// seed, round after round, then, once every round is closed, the tickets
// taken after the shuffle window by arrival. Tickets of a round still open
// have no place yet and are left out. Position i+1 of the result is the
// ticket's place in line. The gate offers released units down it and the
// ingress answers positions from it (Positions): one function, so both
// serve one order. store.ErrNotFound: the item has no waiting room.
func ServingLine(ctx context.Context, db store.Querier, wr *Store, it Item) ([]Ticket, error) {
	l, err := drawLine(ctx, db, wr, it)
	return l.tickets, err
}

// drawnLine is a serving line and the rounds it was drawn from.
type drawnLine struct {
	seed    draw.Seed
	closed  []draw.Round
	tickets []Ticket // in serving order
}

func drawLine(ctx context.Context, db store.Querier, wr *Store, it Item) (drawnLine, error) {
	seed, err := QueueSeed(ctx, db, it.ID)
	if err != nil {
		return drawnLine{}, fmt.Errorf("waitroom: seed of %d: %w", it.ID, err)
	}
	closed, err := ClosedRounds(ctx, db, it.ID)
	if err != nil {
		return drawnLine{}, err
	}
	tickets, err := wr.Tickets(ctx, it.ID)
	if err != nil {
		return drawnLine{}, err
	}
	bound := admissible(it, closed)
	byID := make(map[string]Ticket, len(tickets))
	held := make([]draw.Held, 0, len(tickets))
	for _, t := range tickets {
		if bound >= 0 && t.Arrival > bound {
			continue // its round is open
		}
		byID[t.ID] = t
		held = append(held, draw.Held{ID: t.ID, Arrival: t.Arrival})
	}
	line, err := draw.LineRounds(seed, it.ID, closed, held)
	if err != nil {
		return drawnLine{}, fmt.Errorf("waitroom: the line of %d: %w", it.ID, err)
	}
	out := drawnLine{seed: seed, closed: closed, tickets: make([]Ticket, 0, len(line))}
	for _, h := range line {
		out.tickets = append(out.tickets, byID[h.ID])
	}
	return out, nil
}

// Transcript is item it's draw.RoundTranscript: its seed, its commitment,
// its closed rounds with their roots and seeds, and the hashes of the
// tickets in line, in serving order, so anyone can check the order follows
// from the committed seed and the roots published at each close
// (draw.VerifyRounds). Tickets of a round still open are not listed: their
// set is not final. Only from starts_at on: the caller refuses earlier
// reads, as the seed is never shown before the start. store.ErrNotFound:
// the item has no waiting room.
func Transcript(ctx context.Context, db store.Querier, wr *Store, it Item) (draw.RoundTranscript, error) {
	l, err := drawLine(ctx, db, wr, it)
	if err != nil {
		return draw.RoundTranscript{}, err
	}
	entries := make([]draw.Entry, len(l.tickets))
	for i, t := range l.tickets {
		entries[i] = draw.Entry{Ticket: draw.Hash(t.ID), Arrival: t.Arrival}
	}
	return draw.NewRoundTranscript(it.ID, l.seed, l.closed, entries)
}
