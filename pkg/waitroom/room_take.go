package waitroom

import (
	"context"
	"errors"
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// Take is user's ticket of queued item it: created true when this call
// took it, false when the user held it already (one per buyer per item,
// whatever is asked again). Refusals: ErrNotOpen, ErrEnded, ErrSoldOut,
// ErrNotWarmed, ErrUnavailable (nothing taken).
func (r *Room) Take(ctx context.Context, it Item, user int64) (api.Ticket, bool, error) {
	fresh, err := draw.NewTicketID(nil)
	if err != nil {
		r.log.ErrorContext(ctx, "queue: ticket id", "err", err)
		return api.Ticket{}, false, fmt.Errorf("ticket id: %w", ErrUnavailable)
	}
	// The key first: a ticket is answered with its receipt, so without a
	// key nothing is taken (a fast 503; once read, the key is kept).
	priv, err := r.receiptKey(ctx)
	if err != nil {
		return api.Ticket{}, false, err
	}
	// While the item's slot is being resharded the take script is
	// refused before it runs (TRYAGAIN: the room's keys are split between
	// two nodes); it is taken again, whole, until the move ends. The
	// script answers a buyer's held ticket again, so a retry never takes
	// two.
	var t Ticket
	var created bool
	_, err = stock.WaitOutMove(ctx, r.cfg.MoveWait, func() error {
		rctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
		defer cancel()
		// The stock read fresh, not the ticket reads' shared read: a take
		// after the sell-out is 410, never a ticket that can only read
		// sold_out.
		left, warmed, err := r.st.Stock(rctx, it.ID)
		if err != nil {
			return fmt.Errorf("stock of item %d: %w: %w", it.ID, ErrUnavailable, err)
		}
		t, created, err = r.wr.TakeTicket(rctx, it.ID, user, fresh, it.QueueOpensAt, warmed && left <= 0)
		return err
	})
	switch {
	case errors.Is(err, ErrNotOpen), errors.Is(err, ErrEnded), errors.Is(err, ErrSoldOut), errors.Is(err, ErrNotWarmed):
		return api.Ticket{}, false, err
	case err != nil:
		r.log.WarnContext(ctx, "queue: take ticket", "item_id", it.ID, "err", err)
		return api.Ticket{}, false, fmt.Errorf("take ticket of item %d: %w", it.ID, ErrUnavailable)
	}
	result := "have"
	if created {
		result = "new"
	}
	r.m.tickets.WithLabelValues(result).Inc()
	receipt, err := draw.SignReceipt(priv, draw.Receipt{Item: it.ID, Ticket: draw.Hash(t.ID), Arrival: t.Arrival, TakenAt: t.TakenAt})
	if err != nil {
		return api.Ticket{}, false, fmt.Errorf("receipt of ticket %s: %w", t.ID, err)
	}
	return api.Ticket{Ticket: t.ID, ItemID: it.ID, Arrival: t.Arrival, TakenAt: t.TakenAt, QueueCommitment: it.QueueCommitment,
		Receipt: receipt}, created, nil
}
