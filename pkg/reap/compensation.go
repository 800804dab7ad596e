package reap

import (
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// compensation is what Redis must do with a still-pending reservation once
// the arbiter has decided its request, whoever decided it. It mirrors what
// each decider does after its own commit, so the sweep can finish the job of
// a decider that crashed in between:
//
//   - ORDERED: the stock became an order. Settle (drop the reservation), and
//     never give stock back.
//   - ABORTED, VOIDED: nothing was ordered. Release, give the stock back and
//     clear the buyer mark so the buyer may try again.
//   - REJECTED sold_out: MySQL had no stock for it, so Redis must not get any
//     back (it would be admitted twice); clear the buyer mark.
//   - REJECTED duplicate_buyer: the buyer already holds an order, so the mark
//     stays; this request's qty was never used, so it goes back.
//   - REJECTED unknown_item: as sold_out (MySQL has no such item);
//     REJECTED unprocessable: as ABORTED (the consumer gave it up).
//
// Release is at most once (the reservation is its guard), so finishing it
// while the original decider also does is harmless.
type compensation struct {
	settle  bool
	release stock.ReleaseOptions
}

func compensationFor(d store.Decision) (compensation, error) {
	switch d.Outcome {
	case store.Ordered:
		return compensation{settle: true}, nil
	case store.Aborted, store.Voided:
		return compensation{release: stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}}, nil
	case store.Rejected:
		switch d.Reason {
		case store.ReasonSoldOut:
			return compensation{release: stock.ReleaseOptions{RemoveBuyer: true}}, nil
		case store.ReasonDuplicateBuyer:
			return compensation{release: stock.ReleaseOptions{ReturnStock: true}}, nil
		case store.ReasonUnknownItem: // as sold_out: MySQL has no stock for it
			return compensation{release: stock.ReleaseOptions{RemoveBuyer: true}}, nil
		case store.ReasonUnprocessable: // nothing was ordered or taken
			return compensation{release: stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true}}, nil
		}
	}
	return compensation{}, fmt.Errorf("%w: %s %s/%q", ErrUnknownDecision, d.RequestID, d.Outcome, d.Reason)
}
