package httpapi

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

func itemOfRequest(rid string) (int64, error) {
	item, err := reqid.Item(rid)
	if err != nil {
		return 0, notFound("no such request")
	}
	return item, nil
}

// requestView answers one status poll for user: one Redis round trip (cache
// and reservation together), MySQL only when Redis knows neither.
func (s *Server) requestView(ctx context.Context, rid string, user int64) (orderstatus.View, error) {
	item, err := itemOfRequest(rid)
	if err != nil {
		return orderstatus.View{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	lk, err := s.st.LookupRequest(rctx, item, rid)
	cancel()
	if err != nil {
		s.log.WarnContext(ctx, "status: redis unavailable", "err", err)
		return orderstatus.View{}, unavailable("status temporarily unavailable")
	}
	if lk.Status != nil {
		if v, err := orderstatus.Decode(lk.Status); err == nil {
			return owned(v, v.UserID, user)
		}
		s.log.WarnContext(ctx, "status: undecodable cache entry", "request_id", rid)
	}
	if lk.HasReservation {
		r := lk.Reservation
		v := orderstatus.View{RequestID: rid, ItemID: item, Qty: r.Qty, Status: orderstatus.Pending}
		return owned(v, r.UserID, user)
	}
	v, err := s.viewFromMySQL(ctx, rid)
	if err != nil {
		return orderstatus.View{}, err
	}
	if v.Status != orderstatus.Pending {
		s.cacheView(ctx, v)
	}
	return owned(v, v.UserID, user)
}

// viewFromMySQL reads rid's decision from MySQL, one query shared by the
// concurrent polls of rid; "no such request" is remembered for
// unknownRequestTTL (see requestCache).
func (s *Server) viewFromMySQL(ctx context.Context, rid string) (orderstatus.View, error) {
	if s.reqs.missing.has(rid, time.Now()) {
		return orderstatus.View{}, notFound("no such request")
	}
	ch := s.reqs.flights.DoChan(rid, func() (any, error) {
		// Detached: the polls that share this read outlive the one that
		// started it if that client hangs up.
		asked := time.Now()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.StoreTimeout)
		defer cancel()
		st, err := store.RequestStatus(dctx, s.db, rid)
		if errors.Is(err, store.ErrNotFound) {
			s.reqs.missing.add(rid, asked)
		}
		return st, err
	})
	var res singleflight.Result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return orderstatus.View{}, unavailable("status temporarily unavailable")
	}
	err := res.Err
	if errors.Is(err, store.ErrNotFound) {
		return orderstatus.View{}, notFound("no such request")
	}
	if err != nil {
		s.log.WarnContext(ctx, "status: mysql unavailable", "err", err)
		return orderstatus.View{}, unavailable("status temporarily unavailable")
	}
	st := res.Val.(store.RequestState)
	switch {
	case st.Order != nil:
		return orderstatus.FromOrder(*st.Order), nil
	case st.Decision.Outcome == store.Ordered:
		// Decided and ordered in the same transaction, so this is not
		// reachable; answer conservatively rather than "REJECTED".
		d := st.Decision
		return orderstatus.View{RequestID: rid, ItemID: d.ItemID, Qty: d.Qty, Status: orderstatus.Pending, UserID: d.UserID}, nil
	}
	return orderstatus.FromDecision(st.Decision), nil
}

// owned hides other users' requests behind the same 404 as unknown ones.
func owned(v orderstatus.View, owner, user int64) (orderstatus.View, error) {
	if owner != user {
		return orderstatus.View{}, notFound("no such request")
	}
	v.UserID = owner
	return v, nil
}

// cacheView fills the status cache, best effort: a failure only costs a
// later MySQL read.
func (s *Server) cacheView(ctx context.Context, v orderstatus.View) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.StoreTimeout)
	defer cancel()
	if err := orderstatus.Put(cctx, s.st, v); err != nil && !errors.Is(err, stock.ErrUnavailable) {
		s.log.WarnContext(ctx, "status: cache fill failed", "request_id", v.RequestID, "err", err)
	}
}
