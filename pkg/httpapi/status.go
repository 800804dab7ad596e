package httpapi

import (
	"context"
	"errors"

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
	lk, err := s.status.LookupRequest(rctx, item, rid)
	cancel()
	if err != nil {
		s.log.WarnContext(ctx, "status: redis unavailable", "err", err)
		return orderstatus.View{}, unavailable("status temporarily unavailable")
	}
	if lk.InDoubt {
		return s.inDoubtView(ctx, rid, user)
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
	st, err := s.reqs.read(ctx, rid, func(ctx context.Context) (store.RequestState, error) {
		dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
		defer cancel()
		return store.RequestStatus(dctx, s.db, rid)
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return orderstatus.View{}, notFound("no such request")
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return orderstatus.View{}, unavailable("status temporarily unavailable")
	case err != nil:
		s.log.WarnContext(ctx, "status: mysql unavailable", "err", err)
		return orderstatus.View{}, unavailable("status temporarily unavailable")
	}
	return viewOfState(rid, st), nil
}

// viewOfState is the buyer-visible view of what MySQL holds for rid.
func viewOfState(rid string, st store.RequestState) orderstatus.View {
	switch {
	case st.Order != nil:
		return orderstatus.FromOrder(*st.Order)
	case st.Decision.Outcome == store.Ordered:
		// Decided and ordered in the same transaction, so this is not
		// reachable; answer conservatively rather than "REJECTED".
		d := st.Decision
		return orderstatus.View{RequestID: rid, ItemID: d.ItemID, Qty: d.Qty, Status: orderstatus.Pending, UserID: d.UserID}
	}
	return orderstatus.FromDecision(st.Decision)
}

// inDoubtView answers a poll that found the pay's in-doubt marker
// (orderstatus.Store.MarkInDoubt): a pay may have committed PAID without
// caching it, so only MySQL knows. The read is this poll's own, started after
// the poll arrived: sharing a read in flight (singleflight) could hand it an
// UNPAID read before a commit whose 200 PAID the buyer has already seen. A
// final status read replaces the marker (the cache is repaired); an UNPAID
// does not, since a pay may still be about to commit. Only the owner's polls
// of an order being paid come here, so the MySQL cost is theirs alone.
func (s *Server) inDoubtView(ctx context.Context, rid string, user int64) (orderstatus.View, error) {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	st, err := store.RequestStatus(dctx, s.db, rid)
	cancel()
	if errors.Is(err, store.ErrNotFound) {
		return orderstatus.View{}, notFound("no such request")
	}
	if err != nil {
		s.log.WarnContext(ctx, "status: mysql unavailable (status in doubt)", "err", err)
		return orderstatus.View{}, unavailable("status temporarily unavailable")
	}
	v := viewOfState(rid, st)
	if v.Status != orderstatus.Pending && v.Status != orderstatus.Unpaid {
		s.cacheView(ctx, v)
	}
	return owned(v, v.UserID, user)
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
