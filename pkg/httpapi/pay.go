package httpapi

import (
	"context"
	"errors"

	"github.com/flashsale-dev/flashsale/pkg/store"
)

var (
	errNotPayable = errors.New("httpapi: not payable")
	errNoOrder    = errors.New("httpapi: no order")
)

// pay runs the MySQL pay CAS for user's order of rid.
func (s *Server) pay(ctx context.Context, rid string, user int64) (store.Order, error) {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	o, err := store.PayOrder(dctx, s.db, rid, user)
	switch {
	case err == nil:
		return o, nil
	case errors.Is(err, store.ErrNotPayable):
		return o, errNotPayable
	case errors.Is(err, store.ErrNotFound):
		return o, errNoOrder
	}
	s.log.WarnContext(ctx, "pay: mysql unavailable", "err", err)
	return o, unavailable("payment temporarily unavailable; retry")
}
