package httpapi

import (
	"context"
	"errors"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

var (
	errNotPayable = errors.New("httpapi: not payable")
	errNoOrder    = errors.New("httpapi: no order")
)

// pay runs the MySQL pay CAS for user's order of rid (item's request).
//
// The status cache is marked in doubt first (orderstatus.Store.MarkInDoubt),
// and the pay is refused with a 503, nothing changed, when it cannot be: the
// PAID written to the cache after the commit is best effort, and without the
// marker a failed write left the UNPAID that polls had cached (5 s) to be
// served after the buyer was told PAID (issue 21: the fault suite's history
// checker saw PAID, UNPAID, UNPAID, PAID). A poll that finds the marker asks
// MySQL and repairs the cache once MySQL says PAID; a pay that did not commit
// leaves the marker, which only costs those polls their MySQL read until a
// final status replaces it or it expires (orderstatus.InDoubtTTL).
func (s *Server) pay(ctx context.Context, item int64, rid string, user int64) (store.Order, error) {
	rctx, rcancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	mark, err := s.status.Store().MarkInDoubt(rctx, item, rid)
	rcancel()
	if err != nil {
		s.log.WarnContext(ctx, "pay: redis unavailable, not paying", "err", err)
		return store.Order{}, unavailable("payment temporarily unavailable; nothing was paid, retry")
	}
	if mark == orderstatus.MarkPending {
		// Still pending in Redis, as every poll now answers: no order to
		// pay yet (MySQL may have just made it; the buyer retries once a
		// poll says UNPAID).
		return store.Order{}, errNoOrder
	}
	dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	o, err := store.PayOrder(dctx, s.db, rid, user)
	switch {
	case err == nil:
		return o, nil
	case errors.Is(err, store.ErrNotPayable):
		if o.Status == store.Cancelled {
			// Final: it replaces the marker (best effort, as after a pay).
			s.status.Fill(ctx, orderstatus.FromOrder(o))
		}
		return o, errNotPayable
	case errors.Is(err, store.ErrNotFound):
		return o, errNoOrder
	}
	s.log.WarnContext(ctx, "pay: mysql unavailable", "err", err)
	return o, unavailable("payment temporarily unavailable; retry")
}
