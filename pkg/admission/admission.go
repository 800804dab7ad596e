package admission

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/flashsale-dev/flashsale/pkg/orderlog"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/store"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// The admission path's span names, children of the ingress's HTTP span.
const (
	// SpanReserve is one run of the Redis admission script.
	SpanReserve = "admission.reserve"
	// SpanPublish is the Kafka publish of an admitted order, up to its
	// acks; its context is the message's traceparent.
	SpanPublish = "admission.publish"
)

// Publisher is what admission publishes an admitted order through (and the
// admin DLQ replay, pkg/httpapi). The ingress passes a *orderlog.Publisher,
// which gathers concurrent publishes per partition and adds each message's
// trace context; a *kafka.Writer has the same method and also fits, and
// tests pass fakes. A nil error must mean every message was acknowledged:
// admission answers 202 on nil and aborts the order on any error.
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
	// WaitReplicas and WaitTimeout: see config.Ingress.RedisWaitReplicas.
	WaitReplicas int
	WaitTimeout  time.Duration
	// StoreTimeout bounds each Redis and MySQL call of the path.
	StoreTimeout time.Duration
	// BucketWait bounds how long a buyer whose home bucket is empty waits
	// for the rebalancer while other buckets of the item still have stock
	// (see config.Buckets.Wait); BucketPoll is the pause between the
	// looks.
	BucketWait time.Duration
	BucketPoll time.Duration
	// MoveWait is how long an admission waits out a Redis Cluster reshard
	// of its item's slot (stock.SlotMoving: the script ran nothing) before
	// answering 503; see config.Ingress.RedisMoveWait. 0: no wait.
	MoveWait time.Duration
}

// Request is one buyer's attempt, already authenticated and validated.
type Request struct {
	ItemID         int64
	UserID         int64
	Qty            int
	IdempotencyKey string
	// Granted: the caller checked the buyer's admission grant for the item
	// (required by an item with a waiting room, else NeedGrant).
	Granted bool
	// Claim: the caller checked the buyer's waitlist offer grant; the order
	// claims the unit the offer holds (stock.AdmitRequest.Claim), so the
	// in-memory sold-out flag, which knows only the stock, is not asked.
	Claim bool
	// BeforePublish, if set, is called with an admitted request's id just
	// before its message is published, on the caller's goroutine: what it
	// registers for the request (a status wait) is in place before any
	// status of the request can be stored, since none is stored before
	// the message exists.
	BeforePublish func(rid string)

	// buckets is the item's bucket count and bucket the buyer's home
	// bucket, set by admit.
	buckets, bucket int
}

// Service admits orders. It is safe for concurrent use.
type Service struct {
	cfg      Config
	stock    *stock.Store
	db       *sql.DB
	pub      Publisher
	limiter  *rate.Limiter // nil = off
	soldOut  *soldOutCache
	counts   *bucketCounts
	views    *bucketViews
	inflight sync.Map // request id -> *flight, for concurrent replays
	keyed    keyedFlights
	wakes    *wakes
	retries  *retryQueue
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
	// fingerprint is the keyed request's (keyedFlights): a copy with another
	// one is not answered with this flight's result.
	fingerprint string
}

// withDefaults fills the bounds left zero (a caller that builds a Config by
// hand, as tests and the bench tool do): no call unbounded, no busy poll.
// The deployables' defaults are pkg/config's.
func (c Config) withDefaults() Config {
	if c.StoreTimeout <= 0 {
		c.StoreTimeout = 2 * time.Second
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 3 * time.Second
	}
	if c.BucketPoll <= 0 {
		c.BucketPoll = 25 * time.Millisecond
	}
	return c
}

// Deps are what admission works with: Redis (the reservations), MySQL (the
// arbiter of an unknown outcome) and the Kafka publisher. The caller owns
// them.
type Deps struct {
	Stock     *stock.Store
	DB        *sql.DB
	Publisher Publisher
}

// New returns a Service. Like every component of the pipeline it takes its
// settings, its dependencies, its metrics and its logger, in that order.
func New(cfg Config, d Deps, m *Metrics, log *slog.Logger) *Service {
	cfg = cfg.withDefaults()
	st, db, pub := d.Stock, d.DB, d.Publisher
	s := &Service{cfg: cfg, stock: st, db: db, pub: pub, soldOut: newSoldOutCache(cfg.SoldOutTTL), counts: newBucketCounts(), views: newBucketViews(st, cfg.BucketPoll), wakes: newWakes(st, cfg.StoreTimeout), m: m, log: log, now: time.Now}
	s.retries = &retryQueue{run: func(ctx context.Context, c compensation) error {
		return s.compensate(ctx, c, s.cfg.StoreTimeout)
	}, log: log}
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
	// A keyed request of a holder may be the replay of an admission, whose
	// first answer (a 202) only Redis knows: the flag lets it through.
	if !r.Claim && s.soldOut.Hit(r.ItemID, r.UserID, r.IdempotencyKey != "", now) {
		s.m.soldOutHits.Inc()
		return Result{Outcome: SoldOutMem}
	}
	if r.IdempotencyKey != "" {
		res, first, done := s.keyed.join(ctx, r)
		if !first {
			return res
		}
		defer func() { done(res) }()
		res = s.admitNew(ctx, r, now)
		return res
	}
	return s.admitNew(ctx, r, now)
}

// admitNew is admit for a request that is not a concurrent copy of a keyed
// one in flight here.
func (s *Service) admitNew(ctx context.Context, r Request, now time.Time) Result {
	if s.limiter != nil && !s.limiter.Allow() {
		return Result{Outcome: Shed, RetryAfter: time.Second}
	}
	// A count that changed since it was read (a re-bucketing warm) is
	// answered Moved by the script, which did nothing: read it anew, once.
	for try := 0; ; try++ {
		n, err := s.counts.get(ctx, s.stock, r.ItemID, now, try > 0, s.cfg.StoreTimeout)
		if err != nil {
			s.log.WarnContext(ctx, "admission: redis unavailable", "item_id", r.ItemID, "err", err)
			return Result{Outcome: Unavailable}
		}
		r.buckets, r.bucket = n, stock.HomeBucket(r.UserID, n)
		res, moved := s.admitIn(ctx, r, now)
		if !moved {
			return res
		}
		if try > 0 {
			return Result{Outcome: Unavailable}
		}
	}
}

// admitIn is one admission in the buyer's home bucket, under its own
// request id; moved reports that the item's bucket count was not r.buckets.
func (s *Service) admitIn(ctx context.Context, r Request, now time.Time) (res Result, moved bool) {
	rid := reqid.NewIn(r.ItemID, r.bucket, now)
	f := &flight{done: make(chan struct{})}
	s.inflight.Store(rid, f) // before Redis: a replay may learn rid from Redis at once
	defer func() {
		s.inflight.Delete(rid)
		close(f.done)
	}()
	f.res, moved = s.reserveAndPublish(ctx, r, rid, now)
	return f.res, moved
}

func (s *Service) reserveAndPublish(ctx context.Context, r Request, rid string, now time.Time) (Result, bool) {
	ar, deadline, err := s.reserve(ctx, r, rid, now, s.cfg.UserRateLimit)
	if err == nil && ar.Code == stock.SoldOut && r.buckets > 1 {
		ar, deadline, err = s.awaitStock(ctx, r, rid, now, ar)
	}
	if err == nil && ar.Code == stock.Moved {
		return Result{}, true
	}
	return s.answer(ctx, r, rid, now, ar, deadline, err), false
}

// reserve runs the admission script in r's home bucket, counting it
// against the per-user limit userRate (0: not counted). While the item's
// slot is being resharded the script is refused before it runs (TRYAGAIN:
// its keys are split between two nodes); it is run again, whole, until the
// move ends or cfg.MoveWait has passed, each attempt with a deadline of its
// own since the ones before it ran nothing. A buyer meets a reshard as a
// slower answer, not a 503.
func (s *Service) reserve(ctx context.Context, r Request, rid string, now time.Time, userRate int) (stock.AdmitResult, time.Time, error) {
	var ar stock.AdmitResult
	var deadline time.Time
	refused, err := stock.WaitOutMove(ctx, s.cfg.MoveWait, func() error {
		var err error
		ar, deadline, err = s.reserveOnce(ctx, r, rid, now, userRate)
		return err
	})
	if refused > 0 {
		outcome := "through"
		if err != nil {
			outcome = "gave_up"
		}
		s.m.moveWaits.WithLabelValues(outcome).Inc()
	}
	return ar, deadline, err
}

// reserveOnce is one run of the admission script.
func (s *Service) reserveOnce(ctx context.Context, r Request, rid string, now time.Time, userRate int) (stock.AdmitResult, time.Time, error) {
	ctx, span := tracing.Start(ctx, SpanReserve, trace.SpanKindClient)
	defer span.End()
	deadline := s.now().Add(s.cfg.StoreTimeout)
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	ar, err := s.stock.Admit(rctx, stock.AdmitRequest{
		ItemID: r.ItemID, Buckets: r.buckets, Bucket: r.bucket, UserID: r.UserID, Qty: r.Qty, RequestID: rid, Now: now, Deadline: deadline,
		UserRatePerSec: userRate, IdempotencyKey: r.IdempotencyKey, IdempotencyTTL: s.cfg.IdempotencyTTL, Fingerprint: r.fingerprint(), Granted: r.Granted, Claim: r.Claim,
		WaitReplicas: s.cfg.WaitReplicas, WaitTimeout: s.cfg.WaitTimeout,
	})
	if span.IsRecording() {
		// Ids and the verdict only: never the buyer's Idempotency-Key.
		span.SetAttributes(attribute.String("db.system.name", "redis"), attribute.Int64("flashsale.item_id", r.ItemID),
			attribute.Int("flashsale.bucket", r.bucket), attribute.String("flashsale.request_id", rid),
			attribute.String("flashsale.verdict", string(ar.Code)))
		tracing.Fail(span, err)
	}
	return ar, deadline, err
}

// answer turns the script's verdict (or its error) into the buyer's answer.
func (s *Service) answer(ctx context.Context, r Request, rid string, now time.Time, ar stock.AdmitResult, deadline time.Time, err error) Result {
	if err != nil && stock.NotSent(err) {
		s.log.WarnContext(ctx, "admission: redis unavailable", "item_id", r.ItemID, "err", err)
		return Result{Outcome: Unavailable}
	}
	if err != nil || ar.Code == stock.Late {
		// The script may have run and reserved, and only its reply was lost
		// (or this is a late copy of a call that may have run in time).
		s.log.WarnContext(ctx, "admission: redis did not confirm the admission; aborting", "request_id", rid, "item_id", r.ItemID, "err", err)
		return s.abortUnconfirmed(ctx, r, rid, deadline)
	}
	switch ar.Code {
	case stock.Admitted:
		if ar.Replicas < s.cfg.WaitReplicas {
			// Going on is safe (MySQL still refuses oversell and second
			// orders); only a failover right now could lose this hold.
			s.m.waitShort.Inc()
		}
		if r.BeforePublish != nil {
			r.BeforePublish(rid)
		}
		return s.publish(ctx, r, rid, now)
	case stock.Replay:
		return s.replay(ctx, r, ar.RequestID, true)
	case stock.ReplayUnacked:
		return s.replay(ctx, r, ar.RequestID, false)
	case stock.SoldOut:
		if ar.StockLeft <= 0 && s.soldOut.NeedsMark(r.ItemID, now) {
			if s.soldOut.WantsBits(r.ItemID) {
				s.soldOut.Mark(r.ItemID, now, s.holderBits(ctx, r.ItemID, r.buckets))
			} else {
				s.soldOut.MarkCounting(r.ItemID, now)
			}
		}
		return Result{Outcome: SoldOut}
	case stockMoving:
		return Result{Outcome: StockMoving, RetryAfter: time.Second}
	case stockUnreadable:
		return Result{Outcome: Unavailable}
	case stock.Unknown:
		return Result{Outcome: UnknownItem}
	case stock.NotActive:
		return Result{Outcome: NotActive}
	case stock.NeedGrant:
		return Result{Outcome: NeedGrant}
	case stock.NoOffer:
		return Result{Outcome: NoOffer}
	case stock.OverLimit:
		return Result{Outcome: OverLimit, Limit: ar.Limit}
	case stock.RateLimited:
		return Result{Outcome: RateLimited, RetryAfter: ar.RetryAfter}
	case stock.Already:
		return Result{Outcome: Already, RequestID: ar.RequestID}
	case stock.KeyReused:
		return Result{Outcome: KeyReused, RequestID: ar.RequestID}
	}
	s.log.ErrorContext(ctx, "admission: unexpected verdict", "code", string(ar.Code))
	return Result{Outcome: Unavailable}
}

// publish sends the admitted request to Kafka and waits for the acks of all
// in-sync replicas. The publish is detached from the buyer's connection: a
// client hanging up must not turn a good order into an abort.
func (s *Service) publish(ctx context.Context, r Request, rid string, now time.Time) Result {
	msg := orderlog.OrderMessage{RequestID: rid, ItemID: r.ItemID, UserID: r.UserID, Qty: r.Qty, ReservedMs: now.UnixMilli()}
	val, err := msg.Encode()
	if err == nil {
		// The publish span's context is what the message carries
		// (traceparent, injected by orderlog.Publisher): the consumer's batch
		// links to it.
		sctx, span := tracing.Start(ctx, SpanPublish, trace.SpanKindProducer)
		pctx, cancel := context.WithTimeout(context.WithoutCancel(sctx), s.cfg.PublishTimeout)
		start := time.Now()
		err = s.pub.WriteMessages(pctx, kafka.Message{Key: msg.Key(), Value: val})
		cancel()
		s.m.publishDuration.Observe(time.Since(start).Seconds())
		if span.IsRecording() {
			span.SetAttributes(attribute.String("messaging.system", "kafka"), attribute.String("messaging.operation.type", "send"),
				attribute.String("messaging.kafka.message.key", string(msg.Key())), attribute.String("flashsale.request_id", rid))
			tracing.Fail(span, err)
		}
		span.End()
	}
	if err == nil {
		s.ack(ctx, r, rid)
		return Result{Outcome: Accepted, RequestID: rid}
	}
	s.m.publishFailures.Inc()
	s.log.WarnContext(ctx, "admission: publish failed; aborting", "request_id", rid, "item_id", r.ItemID, "err", err)
	return s.abort(ctx, r, rid, s.cfg.StoreTimeout)
}

// ack records on a keyed request's Idempotency-Key that its message is
// durable, so replays on any replica may answer 202. A failure costs only
// replays: they answer outcome_unknown (poll the request) instead of 202.
func (s *Service) ack(ctx context.Context, r Request, rid string) {
	if r.IdempotencyKey == "" {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.StoreTimeout)
	defer cancel()
	if _, err := s.stock.Ack(actx, r.ItemID, r.UserID, r.IdempotencyKey, rid); err != nil {
		s.log.WarnContext(ctx, "admission: publish ack not recorded; replays will answer outcome_unknown", "request_id", rid, "err", err)
	}
}

// abort decides the request ABORTED through the arbiter and, only if that
// decision won, gives the reservation back in Redis (once: the reservation
// itself is the guard). If the consumer decided first (the publish did get
// through), the stock is left alone and the buyer gets the 202 the order
// deserves.
//
// It is called both when Kafka did not acknowledge and when Redis did not
// confirm the admission script (which may or may not have reserved): in
// both cases no message was acknowledged, so ABORTED is a safe decision, and
// a message kafka-go still delivers later is dropped by the consumer.
//
// The buyer is told "nothing reserved" only when that is known: the release
// returned. Otherwise (MySQL unreachable, so nothing is decided; or Redis
// still failing, so the hold may remain for a while) the answer is
// outcome_unknown with the request id, and the hold is released later by
// the background retry or the reaper's orphan sweep.
func (s *Service) abort(ctx context.Context, r Request, rid string, releaseTimeout time.Duration) Result {
	ctx = context.WithoutCancel(ctx)
	dctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	won, existing, err := store.Decide(dctx, s.db, store.Decision{
		RequestID: rid, ItemID: r.ItemID, UserID: r.UserID, Qty: r.Qty,
		Outcome: store.Aborted, Reason: store.ReasonPublishFailed,
	})
	cancel()
	if err != nil {
		s.log.ErrorContext(ctx, "admission: arbiter unreachable; reservation left for the orphan sweep", "request_id", rid, "err", err)
		return Result{Outcome: Unconfirmed, RequestID: rid}
	}
	if !won {
		s.log.InfoContext(ctx, "admission: request decided before abort", "request_id", rid, "outcome", string(existing.Outcome))
		if existing.Outcome == store.Ordered || existing.Outcome == store.Rejected {
			return Result{Outcome: Accepted, RequestID: rid}
		}
		return Result{Outcome: PublishFailed}
	}
	c := compensation{item: r.ItemID, rid: rid, view: orderstatus.FromDecision(store.Decision{
		RequestID: rid, ItemID: r.ItemID, UserID: r.UserID, Qty: r.Qty, Outcome: store.Aborted, Reason: store.ReasonPublishFailed}),
		opts: stock.ReleaseOptions{ReturnStock: true, RemoveBuyer: true, UserID: r.UserID, IdempotencyKey: r.IdempotencyKey}}
	if err := s.compensate(ctx, c, releaseTimeout); err != nil {
		s.log.WarnContext(ctx, "admission: release of aborted reservation failed; retrying in the background", "request_id", rid, "err", err)
		s.retries.add(c)
		return Result{Outcome: Unconfirmed, RequestID: rid}
	}
	return Result{Outcome: PublishFailed}
}

// abortUnconfirmed aborts a request whose admission script Redis did not
// confirm. The release waits until the script's deadline has passed: a copy
// of the call still on its way to Redis then does nothing (admit.lua answers
// "late"), so a release that finds no reservation means none will appear.
func (s *Service) abortUnconfirmed(ctx context.Context, r Request, rid string, deadline time.Time) Result {
	if d := time.Until(deadline); d > 0 {
		time.Sleep(d)
	}
	// Redis just failed to answer within the store timeout: give the
	// synchronous release a quarter of it, so a stalled Redis costs the
	// buyer little more than one timeout; the background retry takes over.
	res := s.abort(ctx, r, rid, s.cfg.StoreTimeout/4)
	if res.Outcome == PublishFailed {
		// Nothing is reserved: the same answer as Redis being unreachable.
		return Result{Outcome: Unavailable}
	}
	return res
}

// compensate gives an ABORTED reservation back: the buyer's cached status
// first (so a poll never shows PENDING for a decided request once the hold
// is gone), then stock, buyer mark and the Idempotency-Key answer, so the
// buyer may simply retry. Both steps are idempotent.
func (s *Service) compensate(ctx context.Context, c compensation, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := orderstatus.Put(rctx, s.stock, c.view); err != nil {
		return err
	}
	if _, err := s.stock.Release(rctx, c.item, c.rid, c.opts); err != nil {
		return err
	}
	s.soldOut.Forget(c.item)
	return nil
}

// holderBits reads the item's holder bitmap for the sold-out flag; nil when
// it cannot be read (keyed requests then keep going to Redis).
func (s *Service) holderBits(ctx context.Context, item int64, buckets int) stock.HolderBitmap {
	bctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	defer cancel()
	b, err := s.stock.HolderBits(bctx, item, buckets)
	if err != nil {
		s.log.DebugContext(ctx, "admission: no holder bitmap for the sold-out flag", "item_id", item, "err", err)
		return nil
	}
	return b
}
