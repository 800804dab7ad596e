package waitroom

import (
	"context"
	"fmt"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// ServingLine is item it's tickets in serving order, drawn from its seed
// (MySQL) and its tickets (Redis) by draw.Line: the early tickets (taken
// before starts_at) by rank under the seed, then the rest by arrival.
// Position i+1 of the result is the ticket's place in line. The gate offers
// released units down it and the ingress answers positions from it
// (Positions): one function, so both serve one order. store.ErrNotFound:
// the item has no waiting room.
func ServingLine(ctx context.Context, db store.Querier, wr *Store, it store.Item) ([]Ticket, error) {
	seed, err := store.QueueSeed(ctx, db, it.ID)
	if err != nil {
		return nil, fmt.Errorf("waitroom: seed of %d: %w", it.ID, err)
	}
	tickets, err := wr.Tickets(ctx, it.ID)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Ticket, len(tickets))
	held := make([]draw.Held, len(tickets))
	for i, t := range tickets {
		byID[t.ID] = t
		held[i] = draw.Held{ID: t.ID, Arrival: t.Arrival, Early: early(t, it.StartsAt)}
	}
	out := make([]Ticket, 0, len(tickets))
	for _, h := range draw.Line(seed, held) {
		out = append(out, byID[h.ID])
	}
	return out, nil
}

// early reports whether t was taken before starts, so is one of the
// tickets the seed shuffles.
func early(t Ticket, starts time.Time) bool { return t.TakenAt.Before(starts) }

// Transcript is item it's draw.Transcript: its seed, its commitment and
// every ticket's hash in serving order, so anyone can check the order
// follows from the committed seed. Only from starts_at on: the caller
// refuses earlier reads, as the seed is never shown before the start.
// store.ErrNotFound: the item has no waiting room.
func Transcript(ctx context.Context, db store.Querier, wr *Store, it store.Item) (draw.Transcript, error) {
	seed, err := store.QueueSeed(ctx, db, it.ID)
	if err != nil {
		return draw.Transcript{}, fmt.Errorf("waitroom: seed of %d: %w", it.ID, err)
	}
	tickets, err := wr.Tickets(ctx, it.ID)
	if err != nil {
		return draw.Transcript{}, err
	}
	var shuffled int64
	all := make([]draw.Entry, 0, len(tickets))
	for _, t := range tickets {
		all = append(all, draw.Entry{Ticket: draw.Hash(t.ID), Arrival: t.Arrival})
		if early(t, it.StartsAt) {
			shuffled++
		}
	}
	return draw.NewTranscript(it.ID, seed, all, shuffled), nil
}
