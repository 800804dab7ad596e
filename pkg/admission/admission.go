// Package admission is the order path of the ingress: sold-out memory fast
// path, in-process load shedding, the Redis admission script (one round
// trip), the synchronous durable Kafka publish, and the arbiter-guarded
// compensation when the publish fails.
package admission

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/time/rate"

	"github.com/flashsale-dev/flashsale/pkg/queue"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
)

// Publisher is the part of *kafka.Writer admission uses.
type Publisher interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// Config tunes the admission path (see config.Ingress for the meaning).
type Config struct {
	UserRateLimit  int
	AdmissionRPS   int
	SoldOutTTL     time.Duration
	PublishTimeout time.Duration
	IdempotencyTTL time.Duration
	// StoreTimeout bounds each Redis and MySQL call of the path.
	StoreTimeout time.Duration
}

// Request is one buyer's attempt, already authenticated and validated.
type Request struct {
	ItemID         int64
	UserID         int64
	Qty            int
	IdempotencyKey string
}

// Service admits orders. It is safe for concurrent use.
type Service struct {
	cfg      Config
	stock    *stock.Store
	db       *sql.DB
	pub      Publisher
	limiter  *rate.Limiter // nil = off
	soldOut  *soldOutCache
	inflight sync.Map // request id -> *flight, for concurrent replays
	m        *Metrics
	log      *slog.Logger
	now      func() time.Time
}

// flight is an admission between its Redis reservation and its final answer.
// A concurrent replay of the same Idempotency-Key waits for it, so a replay
// never answers 202 before the first request's message is durable.
type flight struct {
	done chan struct{}
	res  Result
}

// New returns a Service.
func New(cfg Config, st *stock.Store, db *sql.DB, pub Publisher, m *Metrics, log *slog.Logger) *Service {
	s := &Service{cfg: cfg, stock: st, db: db, pub: pub, soldOut: newSoldOutCache(cfg.SoldOutTTL), m: m, log: log, now: time.Now}
	if cfg.AdmissionRPS > 0 {
		s.limiter = rate.NewLimiter(rate.Limit(cfg.AdmissionRPS), max(1, cfg.AdmissionRPS/20))
	}
	return s
}

// Admit runs one attempt end to end and returns the buyer's answer.
func (s *Service) Admit(ctx context.Context, r Request) Result {
	res := s.admit(ctx, r)
	s.m.admissions.WithLabelValues(string(res.Outcome)).Inc()
	return res
}

func (s *Service) admit(ctx context.Context, r Request) Result {
	now := s.now()
	// A keyed request of a buyer skips the memory flag: it may be the replay
	// of an admission, whose first answer (a 202) only Redis knows.
	if s.soldOut.Hit(r.ItemID, r.UserID, r.IdempotencyKey != "", now) {
		s.m.soldOutHits.Inc()
		return Result{Outcome: SoldOutMem}
	}
	if s.limiter != nil && !s.limiter.Allow() {
		return Result{Outcome: Shed, RetryAfter: time.Second}
	}
	rid := reqid.New(r.ItemID, now)
	f := &flight{done: make(chan struct{})}
	s.inflight.Store(rid, f) // before Redis: a replay may learn rid from Redis at once
	defer func() {
		s.inflight.Delete(rid)
		close(f.done)
	}()
	f.res = s.reserveAndPublish(ctx, r, rid, now)
	return f.res
}

func (s *Service) reserveAndPublish(ctx context.Context, r Request, rid string, now time.Time) Result {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	ar, err := s.stock.Admit(rctx, stock.AdmitRequest{
		ItemID: r.ItemID, UserID: r.UserID, Qty: r.Qty, RequestID: rid, Now: now,
		UserRatePerSec: s.cfg.UserRateLimit, IdempotencyKey: r.IdempotencyKey, IdempotencyTTL: s.cfg.IdempotencyTTL,
	})
	cancel()
	if err != nil {
		s.log.WarnContext(ctx, "admission: redis unavailable", "item_id", r.ItemID, "err", err)
		return Result{Outcome: Unavailable}
	}
	switch ar.Code {
	case stock.Admitted:
		return s.publish(ctx, r, rid, now)
	case stock.Replay:
		return s.replay(ctx, ar.RequestID)
	case stock.SoldOut:
		if ar.StockLeft <= 0 && s.soldOut.NeedsMark(r.ItemID, now) {
			s.soldOut.Mark(r.ItemID, now, s.buyersSnapshot(ctx, r.ItemID))
		}
		return Result{Outcome: SoldOut}
	case stock.Unknown:
		return Result{Outcome: UnknownItem}
	case stock.NotActive:
		return Result{Outcome: NotActive}
	case stock.OverLimit:
		return Result{Outcome: OverLimit, Limit: ar.Limit}
	case stock.RateLimited:
		return Result{Outcome: RateLimited, RetryAfter: ar.RetryAfter}
	case stock.Already:
		return Result{Outcome: Already}
	}
	s.log.ErrorContext(ctx, "admission: unexpected verdict", "code", string(ar.Code))
	return Result{Outcome: Unavailable}
}

// replay answers a repeated Idempotency-Key with the first request's answer:
// if the first request is still being published by this process, wait for it.
func (s *Service) replay(ctx context.Context, first string) Result {
	v, ok := s.inflight.Load(first)
	if !ok {
		return Result{Outcome: Replayed, RequestID: first}
	}
	f := v.(*flight)
	select {
	case <-f.done:
	case <-ctx.Done():
		return Result{Outcome: Unavailable}
	}
	if f.res.OK() {
		return Result{Outcome: Replayed, RequestID: first}
	}
	return f.res
}

// publish sends the admitted request to Kafka and waits for the acks of all
// in-sync replicas. The publish is detached from the buyer's connection: a
// client hanging up must not turn a good order into an abort.
func (s *Service) publish(ctx context.Context, r Request, rid string, now time.Time) Result {
	msg := queue.OrderMessage{RequestID: rid, ItemID: r.ItemID, UserID: r.UserID, Qty: r.Qty, ReservedMs: now.UnixMilli()}
	val, err := msg.Encode()
	if err == nil {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PublishTimeout)
		start := time.Now()
		err = s.pub.WriteMessages(pctx, kafka.Message{Key: msg.Key(), Value: val})
		cancel()
		s.m.publishDuration.Observe(time.Since(start).Seconds())
	}
	if err == nil {
		return Result{Outcome: Accepted, RequestID: rid}
	}
	s.m.publishFailures.Inc()
	s.log.WarnContext(ctx, "admission: publish failed; aborting", "request_id", rid, "item_id", r.ItemID, "err", err)
	return s.abort(ctx, r, rid)
}

// abort decides the request ABORTED through the arbiter and, only if that
// decision won, gives the reservation back in Redis (once: the reservation
// itself is the guard). If the consumer decided first (the publish did get
// through), the stock is left alone and the buyer gets the 202 the order
// deserves. If MySQL is unreachable the reservation stays for the reaper's
// orphan sweep: without a decision nobody may release it.
func (s *Service) abort(ctx context.Context, r Request, rid string) Result {
	ctx = context.WithoutCancel(ctx)
	dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	won, existing, err := store.Decide(dctx, s.db, store.Decision{
		RequestID: rid, ItemID: r.ItemID, UserID: r.UserID, Qty: r.Qty,
		Outcome: store.Aborted, Reason: store.ReasonPublishFailed,
	})
	cancel()
	if err != nil {
		s.log.ErrorContext(ctx, "admission: arbiter unreachable; reservation left for the orphan sweep", "request_id", rid, "err", err)
		return Result{Outcome: Orphaned}
	}
	if !won {
		s.log.InfoContext(ctx, "admission: request decided before abort", "request_id", rid, "outcome", string(existing.Outcome))
		if existing.Outcome == store.Ordered || existing.Outcome == store.Rejected {
			return Result{Outcome: Accepted, RequestID: rid}
		}
		return Result{Outcome: PublishFailed}
	}
	s.release(ctx, r, rid)
	return Result{Outcome: PublishFailed}
}

// release gives an ABORTED reservation back: stock, buyer mark and the
// Idempotency-Key answer, so the buyer may simply retry. One retry covers a
// blip; past that the reaper finds the decided reservation.
func (s *Service) release(ctx context.Context, r Request, rid string) {
	opts := stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true, UserID: r.UserID, IdempotencyKey: r.IdempotencyKey}
	var err error
	for range 2 {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
		_, err = s.stock.Release(rctx, r.ItemID, rid, opts)
		cancel()
		if err == nil {
			s.soldOut.Forget(r.ItemID)
			return
		}
		if !errors.Is(err, stock.ErrUnavailable) {
			break
		}
	}
	s.log.ErrorContext(ctx, "admission: release of aborted reservation failed", "request_id", rid, "err", err)
}

// maxBuyerSnapshot bounds the buyer set copied into memory; a bigger sale
// keeps the flag for unkeyed requests only.
const maxBuyerSnapshot = 200_000

// buyersSnapshot reads the item's buyer set for the sold-out flag; nil when
// it is too big or unreadable (keyed requests then keep going to Redis).
func (s *Service) buyersSnapshot(ctx context.Context, item int64) map[int64]struct{} {
	bctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	ids, err := s.stock.Buyers(bctx, item, maxBuyerSnapshot)
	if err != nil {
		s.log.DebugContext(ctx, "admission: no buyer snapshot for the sold-out flag", "item_id", item, "err", err)
		return nil
	}
	m := make(map[int64]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return m
}
