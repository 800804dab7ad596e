package waitroom

import (
	"context"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/lease"
)

// AdminView is an operator's view of queued item it's waiting room: its
// settings, the gate's position and holder, and the waitlist's counts.
// ErrUnavailable when Redis does not answer.
func (r *Room) AdminView(ctx context.Context, it Item) (api.AdminQueue, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	defer cancel()
	g, err := r.wr.ReadGate(ctx, it.ID)
	if err != nil {
		return api.AdminQueue{}, fmt.Errorf("gate of item %d: %w", it.ID, ErrUnavailable)
	}
	holder, err := lease.Current(ctx, r.wr.client(), GateLeaseKey())
	if err != nil {
		return api.AdminQueue{}, fmt.Errorf("gate lease: %w", ErrUnavailable)
	}
	w, err := r.wr.ReadWaitlist(ctx, it.ID)
	if err != nil {
		return api.AdminQueue{}, fmt.Errorf("waitlist of item %d: %w", it.ID, ErrUnavailable)
	}
	v := api.AdminQueue{ItemID: it.ID, OpensAt: it.QueueOpensAt.UTC(), StartsAt: it.StartsAt.UTC(), Commitment: it.QueueCommitment,
		Rate: it.QueueRate, Tickets: g.Tickets, Serving: g.Serving, Waiting: max(g.Tickets-g.Serving, 0),
		Waitlist: w.Report()}
	if holder != "" {
		v.GateHolder = &holder
	}
	return v, nil
}
