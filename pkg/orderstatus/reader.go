package orderstatus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// The answers of a status read that are not a View.
var (
	// ErrNoRequest: no such request for this buyer: an unknown or
	// malformed request id, or another buyer's request (the same answer,
	// so ids cannot be probed).
	ErrNoRequest = errors.New("orderstatus: no such request")
	// ErrUnavailable: neither Redis nor MySQL could answer now.
	ErrUnavailable = errors.New("orderstatus: status temporarily unavailable")
)

// ReaderConfig is what a Reader is told.
type ReaderConfig struct {
	// StoreTimeout bounds each Redis and MySQL call, and a subscribe.
	StoreTimeout time.Duration
	// Waiters bounds the polls waiting at once (FLASHSALE_STATUS_WAITERS).
	Waiters int
	// Recheck is how often a waiting poll reads again without an
	// announcement (FLASHSALE_STATUS_RECHECK); 0 relies on announcements.
	Recheck time.Duration
}

// Reader answers the status polls of the ingress (GET
// /api/v1/orders/{request_id}): one Redis call for the cached status and
// the reservation together, MySQL only when Redis knows neither (one query
// shared by the concurrent polls of a request, "no such request" remembered
// briefly: request_cache.go), and the long polls' wait (await.go), which
// fans one status subscription per item out to its waiters (waits.go).
type Reader struct {
	cfg    ReaderConfig
	st     *Store
	ledger *stock.Store
	db     *sql.DB
	reqs   *requestCache
	waits  *statusWaits
	log    *slog.Logger
	// fromMySQL counts the reads that asked MySQL (RegisterReadMetrics).
	fromMySQL prometheus.Counter
}

// NewReader returns the status reader over the ledger's Redis and db, and
// registers its wait and read metrics (RegisterWaitMetrics,
// RegisterReadMetrics) on reg.
func NewReader(cfg ReaderConfig, ledger *stock.Store, db *sql.DB, reg prometheus.Registerer, log *slog.Logger) *Reader {
	st := NewStore(ledger)
	r := &Reader{cfg: cfg, st: st, ledger: ledger, db: db, reqs: newRequestCache(),
		waits: newStatusWaits(st, cfg.Waiters, cfg.StoreTimeout, log), log: log}
	RegisterWaitMetrics(reg, r.waits.waiting)
	r.fromMySQL = RegisterReadMetrics(reg)
	return r
}

// Store is the status cache the reader reads (the pay marks it in doubt).
func (r *Reader) Store() *Store { return r.st }

// Stop makes every poll waiting in Poll answer now and the later ones
// answer at once (server shutdown).
func (r *Reader) Stop() { r.waits.stop() }

// testHookRead, when set by a test, runs at the start of each Read (a
// poll's first read and every re-read of a waiting poll): the test counts
// what a poll costs Redis.
var testHookRead func()

// Read answers one status poll of rid for user: one Redis round trip (cache
// and reservation together), MySQL only when Redis knows neither. Its errors
// are ErrNoRequest and ErrUnavailable.
func (r *Reader) Read(ctx context.Context, rid string, user int64) (View, error) {
	if h := testHookRead; h != nil {
		h()
	}
	item, err := reqid.Item(rid)
	if err != nil {
		return View{}, ErrNoRequest
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	lk, err := r.st.LookupRequest(rctx, item, rid)
	cancel()
	if err != nil {
		r.log.WarnContext(ctx, "status: redis unavailable", "err", err)
		return View{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if lk.InDoubt {
		return r.inDoubtView(ctx, rid, user)
	}
	if lk.Status != nil {
		if v, err := Decode(lk.Status); err == nil {
			return owned(v, v.UserID, user)
		}
		r.log.WarnContext(ctx, "status: undecodable cache entry", "request_id", rid)
	}
	if lk.HasReservation {
		res := lk.Reservation
		v := View{RequestID: rid, ItemID: item, Qty: res.Qty, Status: Pending}
		return owned(v, res.UserID, user)
	}
	v, err := r.viewFromMySQL(ctx, rid)
	if err != nil {
		return View{}, err
	}
	if v.Status != Pending {
		r.Fill(ctx, v)
	}
	return owned(v, v.UserID, user)
}

// viewFromMySQL reads rid's decision from MySQL, one query shared by the
// concurrent polls of rid; "no such request" is remembered for
// unknownRequestTTL (see requestCache).
func (r *Reader) viewFromMySQL(ctx context.Context, rid string) (View, error) {
	st, err := r.reqs.read(ctx, rid, func(ctx context.Context) (store.RequestState, error) {
		r.fromMySQL.Inc()
		dctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
		defer cancel()
		return store.RequestStatus(dctx, r.db, rid)
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return View{}, ErrNoRequest
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return View{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	case err != nil:
		r.log.WarnContext(ctx, "status: mysql unavailable", "err", err)
		return View{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return viewOfState(rid, st), nil
}

// viewOfState is the buyer-visible view of what MySQL holds for rid.
func viewOfState(rid string, st store.RequestState) View {
	switch {
	case st.Order != nil:
		return FromOrder(*st.Order)
	case st.Decision.Outcome == store.Ordered:
		// Decided and ordered in the same transaction, so this is not
		// reachable; answer conservatively rather than "REJECTED".
		d := st.Decision
		return View{RequestID: rid, ItemID: d.ItemID, Qty: d.Qty, Status: Pending, UserID: d.UserID}
	}
	return FromDecision(st.Decision)
}

// inDoubtView answers a poll that found the pay's in-doubt marker
// (Store.MarkInDoubt): a pay may have committed PAID without caching it, so
// only MySQL knows. The read is this poll's own, started after the poll
// arrived: sharing a read in flight (singleflight) could hand it an UNPAID
// read before a commit whose 200 PAID the buyer has already seen. A final
// status read replaces the marker (the cache is repaired); an UNPAID does
// not, since a pay may still be about to commit. Only the owner's polls of
// an order being paid come here, so the MySQL cost is theirs alone.
func (r *Reader) inDoubtView(ctx context.Context, rid string, user int64) (View, error) {
	r.fromMySQL.Inc()
	dctx, cancel := context.WithTimeout(ctx, r.cfg.StoreTimeout)
	st, err := store.RequestStatus(dctx, r.db, rid)
	cancel()
	if errors.Is(err, store.ErrNotFound) {
		return View{}, ErrNoRequest
	}
	if err != nil {
		r.log.WarnContext(ctx, "status: mysql unavailable (status in doubt)", "err", err)
		return View{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	v := viewOfState(rid, st)
	if v.Status != Pending && v.Status != Unpaid {
		r.Fill(ctx, v)
	}
	return owned(v, v.UserID, user)
}

// owned hides other users' requests behind the same answer as unknown ones.
func owned(v View, owner, user int64) (View, error) {
	if owner != user {
		return View{}, ErrNoRequest
	}
	v.UserID = owner
	return v, nil
}

// Fill fills the status cache with v, best effort: a failure only costs a
// later MySQL read.
func (r *Reader) Fill(ctx context.Context, v View) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.StoreTimeout)
	defer cancel()
	if err := Put(cctx, r.ledger, v); err != nil && !errors.Is(err, stock.ErrUnavailable) {
		r.log.WarnContext(ctx, "status: cache fill failed", "request_id", v.RequestID, "err", err)
	}
}

// RegisterReadMetrics exports how many status reads asked MySQL: a poll of a
// request Redis knows neither as reserved nor by a cached status (an
// unknown or expired one, or a decision whose status is not cached yet),
// one query shared by its concurrent polls, and every poll of an order
// whose pay left the in-doubt marker. Beside the GET route's request count
// it is the share of polls that cost MySQL a query. NewReader registers it;
// it is exported so the metric-name check (deploy/metricnames_test.go)
// sees it.
func RegisterReadMetrics(reg prometheus.Registerer) prometheus.Counter {
	return promauto.With(reg).NewCounter(prometheus.CounterOpts{
		Name: "flashsale_status_mysql_reads_total",
		Help: "Status reads that asked MySQL (Redis knew neither the reservation nor a cached status, or the status was in doubt after a pay); concurrent polls of a request share one.",
	})
}
