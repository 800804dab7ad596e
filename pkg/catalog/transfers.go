package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

// TransfersOpenError is a warm refused because transfers between the
// item's buckets are not finished: each has moved its units in one store
// and not yet in the other, and a copy of MySQL would put them back where
// the transfer took them from. It names the transfers and says what to do;
// it is ErrInFlight and store.ErrTransfersOpen.
type TransfersOpenError struct {
	ItemID int64
	Count  int64            // open transfers of the item
	Open   []store.Transfer // the oldest of them
}

func (e *TransfersOpenError) Error() string {
	return "catalog: " + e.Advice()
}

func (e *TransfersOpenError) Unwrap() []error { return []error{ErrInFlight, store.ErrTransfersOpen} }

// Advice is the refusal in words for the operator: which transfers, and
// what finishes them.
func (e *TransfersOpenError) Advice() string {
	names := make([]string, 0, len(e.Open))
	for _, t := range e.Open {
		names = append(names, fmt.Sprintf("transfer %d (bucket %d -> %d, qty %d, %s since %s)",
			t.ID, t.From, t.To, t.Qty, t.State, t.CreatedAt.UTC().Format(time.RFC3339)))
	}
	more := ""
	if n := e.Count - int64(len(e.Open)); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("%s%s of item %d not finished, so the warm would give its units twice; "+
		"the rebalancer in the reapers finishes it on its next pass (FLASHSALE_REBALANCE_INTERVAL above 0, one reaper holding flashsale_rebalance_lease_held): "+
		"if it stays open, read that reaper's log for the transfer id, then repeat POST /api/v1/admin/items/%d/warm",
		strings.Join(names, ", "), more, e.ItemID, e.ItemID)
}

// refuseOpenTransfers returns a *TransfersOpenError when item has open
// transfers (read inside the warm's transaction, the item's row locked).
func refuseOpenTransfers(ctx context.Context, q store.Querier, itemID int64) error {
	n, err := store.OpenTransfersOf(ctx, q, itemID)
	if err != nil || n == 0 {
		return err
	}
	open, err := store.OpenTransfersOfItem(ctx, q, itemID, 3)
	if err != nil {
		return err
	}
	return &TransfersOpenError{ItemID: itemID, Count: n, Open: open}
}
