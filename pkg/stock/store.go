package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MarkedGuardTTL is how long a restore guard is kept once MySQL marked its
// record applied (ExpireRestoreGuards). Until then it has no TTL. It must
// exceed the longest time a reaper may take between reading a record as
// pending and its restore reaching Redis (one read and one restore call,
// each bounded by the store timeout, seconds): a slower replica that read
// the record before another one marked it still finds the guard.
const MarkedGuardTTL = time.Hour

// Store runs the stock operations on Redis (a single node or a Cluster).
type Store struct {
	rdb redis.UniversalClient
	co  *Coalescer
}

// New returns a Store on rdb.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// WithCoalescer returns a Store whose hot-path calls (Admit, Ack,
// LookupRequest, PutStatus) share round trips through co; the rest go
// straight to rdb.
// The caller closes co after the Store's last use.
func (s *Store) WithCoalescer(co *Coalescer) *Store { return &Store{rdb: s.rdb, co: co} }

// run runs script on the Coalescer when there is one, else alone.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if s.co != nil {
		return s.co.EvalSha(ctx, script, keys, args...)
	}
	return runOnce(ctx, s.rdb, script, keys, args...) // exact NotSent: sendonce.go
}

// Client returns the underlying client (for health checks).
func (s *Store) Client() redis.UniversalClient { return s.rdb }

func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// AdmitCode is the admission script's verdict.
type AdmitCode string

// Admission verdicts; see lua/admit.lua.
const (
	Admitted AdmitCode = "ok"
	Replay   AdmitCode = "replay"
	// ReplayUnacked: the Idempotency-Key's first request is reserved but
	// nobody recorded that Kafka acknowledged it (still publishing, or its
	// ingress died): not a 202.
	ReplayUnacked AdmitCode = "replay_unacked"
	Unknown       AdmitCode = "unknown"
	NotActive     AdmitCode = "not_active"
	OverLimit     AdmitCode = "over_limit"
	RateLimited   AdmitCode = "rate_limited"
	Already       AdmitCode = "already"
	SoldOut       AdmitCode = "sold_out"
	// Moved: the item's bucket count is not the one the caller assumed
	// (AdmitResult.Buckets is Redis'); nothing was done.
	Moved AdmitCode = "moved"
	// Late: the script ran after AdmitRequest.Deadline and did nothing.
	Late AdmitCode = "late"
)

// AdmitRequest is one buyer's attempt.
type AdmitRequest struct {
	ItemID int64
	// Buckets is the item's bucket count as the caller knows it, Bucket the
	// buyer's home bucket (HomeBucket) and the request id's. A count that is
	// no longer Redis' answers Moved.
	Buckets   int
	Bucket    int
	UserID    int64
	Qty       int
	RequestID string
	// Now is informational: the script judges the sale window and stamps the
	// reservation with the Redis server's TIME.
	Now time.Time
	// Deadline, when set, is when the caller stops waiting for the reply;
	// a copy of the call that runs later does nothing (Late).
	Deadline time.Time
	// WaitReplicas, when above 0, makes the call wait (Redis WAIT, up to
	// WaitTimeout) until that many replicas have the script's writes, so a
	// reservation survives a failover of its primary (see admitwait.go).
	WaitReplicas int
	WaitTimeout  time.Duration
	// UserRatePerSec is the per-user limit for this item (0 = off).
	UserRatePerSec int
	// IdempotencyKey is the client's Idempotency-Key ("" = none).
	IdempotencyKey string
	IdempotencyTTL time.Duration
}

// AdmitResult is the script's answer.
type AdmitResult struct {
	Code AdmitCode
	// StockLeft is set for Admitted and SoldOut.
	StockLeft int64
	// RequestID is the first request's id for Replay and ReplayUnacked, and
	// the request by which the buyer holds the item for Already.
	RequestID string
	// RetryAfter is set for RateLimited.
	RetryAfter time.Duration
	// Limit is the per-user limit for OverLimit.
	Limit int
	// Buckets is the item's bucket count for Moved.
	Buckets int
	// Replicas is how many replicas acknowledged the script's writes within
	// AdmitRequest.WaitTimeout (only when WaitReplicas was set).
	Replicas int
}

// Admit runs the admission script: one round trip. The script is idempotent
// per r.RequestID, so the client's retry of a command whose reply was lost
// answers Admitted again without taking stock twice.
func (s *Store) Admit(ctx context.Context, r AdmitRequest) (AdmitResult, error) {
	k := BucketKeys(r.ItemID, r.Bucket)
	idemKey, hasIdem := k.Stock, "0" // a key of the same slot, never read when unused
	if r.IdempotencyKey != "" {
		idemKey, hasIdem = k.Idempotency(r.UserID, r.IdempotencyKey), "1"
	}
	rateKey := k.Stock
	if r.UserRatePerSec > 0 {
		rateKey = k.UserRate(r.UserID)
	}
	// The want flag only for a bucketed item: a key that does not exist
	// makes a multi-key script TRYAGAIN while its slot migrates, and an
	// unbucketed item never sets it.
	wantKey := k.Stock
	if r.Buckets > 1 {
		wantKey = k.Want
	}
	keys := []string{k.Stock, k.Meta, k.Holders, k.Reservations, idemKey, rateKey, k.HolderBits, wantKey}
	args := []any{r.UserID, r.Qty, r.RequestID, deadlineMs(r.Deadline), r.UserRatePerSec,
		r.IdempotencyTTL.Milliseconds(), hasIdem, HolderBit(r.UserID), max(r.Buckets, 1), wantTTL.Milliseconds()}
	var res []string
	var replicas int
	var err error
	if r.WaitReplicas > 0 {
		res, replicas, err = s.admitAndWait(ctx, k.Stock, keys, args, r.WaitReplicas, r.WaitTimeout)
	} else {
		res, err = s.run(ctx, admitScript, keys, args...).StringSlice()
	}
	if err != nil {
		return AdmitResult{}, unavailable("stock: admit", err)
	}
	if len(res) != 2 {
		return AdmitResult{}, fmt.Errorf("stock: admit: unexpected reply %q", res)
	}
	out := AdmitResult{Code: AdmitCode(res[0]), Replicas: replicas}
	switch out.Code {
	case Admitted, SoldOut:
		out.StockLeft, _ = strconv.ParseInt(res[1], 10, 64)
	case Replay, ReplayUnacked, Already:
		out.RequestID = res[1]
	case RateLimited:
		ms, _ := strconv.ParseInt(res[1], 10, 64)
		out.RetryAfter = time.Duration(max(ms, 1)) * time.Millisecond
	case OverLimit:
		out.Limit, _ = strconv.Atoi(res[1])
	case Moved:
		out.Buckets, _ = strconv.Atoi(res[1])
	case Unknown, NotActive, Late:
	default:
		return AdmitResult{}, fmt.Errorf("stock: admit: unknown verdict %q", res[0])
	}
	return out, nil
}

// wantTTL is how long a bucket found short keeps asking the rebalancer for
// stock (Keys.Want): a few rebalancer passes, so demand that stopped stops
// drawing stock.
const wantTTL = 2 * time.Second

func deadlineMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// ReleaseOptions says what a release gives back.
type ReleaseOptions struct {
	// ReturnStock gives the qty back to the Redis stock (ABORTED, VOIDED,
	// duplicate_buyer). Not for sold_out: MySQL had no stock to match it.
	ReturnStock bool
	// RemoveBuyer clears the buyer mark so the buyer may try again.
	RemoveBuyer bool
	// Holder, when set, makes the buyer mark name this request id: a
	// duplicate_buyer's mark must name the order the buyer really holds.
	Holder string
	// UserID and IdempotencyKey, when set, drop the Idempotency-Key answer too.
	UserID         int64
	IdempotencyKey string
}

// Release undoes one reservation at most once; it reports whether this call
// did it (false: already released or settled).
func (s *Store) Release(ctx context.Context, itemID int64, requestID string, o ReleaseOptions) (bool, error) {
	keys, args := releaseCall(itemID, requestID, o)
	n, err := releaseScript.Run(ctx, s.rdb, keys, args...).Int()
	if err != nil {
		return false, unavailable("stock: release", err)
	}
	return n == 1, nil
}

// releaseCall builds release.lua's keys and arguments; see its header.
func releaseCall(itemID int64, requestID string, o ReleaseOptions) ([]string, []any) {
	k := RequestKeys(itemID, requestID)
	extra, dropIdem := k.Stock, "0" // a key of the same slot, never touched when unused
	if o.IdempotencyKey != "" {
		extra, dropIdem = k.Idempotency(o.UserID, o.IdempotencyKey), "1"
	}
	return []string{k.Stock, k.Holders, k.Reservations, extra},
		[]any{requestID, flag(o.ReturnStock), flag(o.RemoveBuyer), dropIdem, o.Holder}
}

// Settle drops the reservations of requests that became orders: one call
// per bucket the requests were admitted in (each bucket is its own slot).
func (s *Store) Settle(ctx context.Context, itemID int64, requestIDs []string) error {
	byBucket := map[int][]any{}
	for _, id := range requestIDs {
		b := RequestKeys(itemID, id).Bucket
		byBucket[b] = append(byBucket[b], id)
	}
	for b, args := range byBucket {
		if err := settleScript.Run(ctx, s.rdb, []string{BucketKeys(itemID, b).Reservations}, args...).Err(); err != nil {
			return unavailable("stock: settle", err)
		}
	}
	return nil
}

// RestoreResult is what Restore did.
type RestoreResult int

// Restore outcomes; see lua/restore.lua.
const (
	RestoreApplied RestoreResult = 1  // qty given back now
	RestoreSeen    RestoreResult = 0  // given back before: no-op
	RestoreNoStock RestoreResult = -1 // Redis has no state for the item; warm rebuilds it from MySQL
)

// Restore gives the qty of requestID's cancelled order back to bucket of the
// item in Redis exactly once. Its guard has no TTL until
// ExpireRestoreGuards, after the mark.
func (s *Store) Restore(ctx context.Context, itemID int64, bucket int, requestID string, qty int) (RestoreResult, error) {
	k := BucketKeys(itemID, bucket)
	n, err := restoreScript.Run(ctx, s.rdb, []string{k.Stock, k.RestoreGuard(requestID)}, qty).Int()
	if err != nil {
		return 0, unavailable("stock: restore", err)
	}
	return RestoreResult(n), nil
}

// Reservation is one pending admission.
type Reservation struct {
	RequestID  string
	UserID     int64
	Qty        int
	ReservedAt time.Time
}

func parseReservation(id, v string) (Reservation, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return Reservation{}, fmt.Errorf("stock: malformed reservation %q", v)
	}
	user, err1 := strconv.ParseInt(parts[0], 10, 64)
	qty, err2 := strconv.Atoi(parts[1])
	ms, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Reservation{}, fmt.Errorf("stock: malformed reservation %q: %w", v, err)
	}
	return Reservation{RequestID: id, UserID: user, Qty: qty, ReservedAt: time.UnixMilli(ms).UTC()}, nil
}

// GetReservation returns the pending reservation of requestID, if any.
func (s *Store) GetReservation(ctx context.Context, itemID int64, requestID string) (Reservation, bool, error) {
	v, err := s.rdb.HGet(ctx, RequestKeys(itemID, requestID).Reservations, requestID).Result()
	if errors.Is(err, redis.Nil) {
		return Reservation{}, false, nil
	}
	if err != nil {
		return Reservation{}, false, unavailable("stock: get reservation", err)
	}
	r, err := parseReservation(requestID, v)
	return r, err == nil, err
}

// ScanReservations calls fn for every pending reservation of the item, in
// every bucket Redis knows of, in HSCAN pages (no blocking HGETALL on a big
// hash).
func (s *Store) ScanReservations(ctx context.Context, itemID int64, fn func(Reservation) error) error {
	n, _, err := s.Buckets(ctx, itemID)
	if err != nil {
		return err
	}
	for b := range max(n, 1) {
		if err := s.ScanBucketReservations(ctx, itemID, b, fn); err != nil {
			return err
		}
	}
	return nil
}

// ScanBucketReservations calls fn for every pending reservation of one
// bucket of the item.
func (s *Store) ScanBucketReservations(ctx context.Context, itemID int64, bucket int, fn func(Reservation) error) error {
	key := BucketKeys(itemID, bucket).Reservations
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "*", 1000).Result()
		if err != nil {
			return unavailable("stock: scan reservations", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			r, err := parseReservation(kv[i], kv[i+1])
			if err != nil {
				return err
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// State is an item's Redis state, for audits and the public view: the sum
// over its buckets, and each bucket's own.
type State struct {
	Warmed     bool
	Stock      int64
	Buyers     int64
	Pending    int64 // reservations
	PendingQty int64
	// OldestReservedAt is when the oldest pending reservation was made, by
	// Redis' clock (zero with none): the orphan sweep voids it once it is
	// older than the grace, so its age says how close buyers are to losing
	// a 202 to a stuck pipeline.
	OldestReservedAt time.Time
	StartsAt         time.Time
	EndsAt           time.Time
	PerUserLimit     int
	// Buckets is the item's bucket count (1 for an unbucketed item), and
	// PerBucket each bucket's state (Warmed: the bucket has its stock key).
	Buckets   int
	PerBucket []State
}

// Stock returns the Redis stock of an item (the sum of its buckets) and
// whether the item is warmed.
func (s *Store) Stock(ctx context.Context, itemID int64) (int64, bool, error) {
	n, warmed, err := s.Buckets(ctx, itemID)
	if err != nil || !warmed {
		return 0, false, err
	}
	stocks, err := s.BucketStocks(ctx, itemID, n)
	if err != nil {
		return 0, false, err
	}
	var sum int64
	for _, v := range stocks {
		if v < 0 {
			return 0, false, nil // a bucket lost its stock key: not warmed
		}
		sum += v
	}
	return sum, true, nil
}

// ReadState reads an item's whole Redis state, bucket by bucket. The reads
// are not one atomic snapshot; audits read it at quiescence.
func (s *Store) ReadState(ctx context.Context, itemID int64) (State, error) {
	first, err := s.readBucketState(ctx, itemID, 0)
	if err != nil {
		return State{}, err
	}
	st := first
	st.Buckets = max(st.Buckets, 1)
	st.PerBucket = []State{first}
	for b := 1; b < st.Buckets; b++ {
		bs, err := s.readBucketState(ctx, itemID, b)
		if err != nil {
			return State{}, err
		}
		st.PerBucket = append(st.PerBucket, bs)
		st.Warmed = st.Warmed && bs.Warmed
		st.Stock += bs.Stock
		st.Buyers += bs.Buyers
		st.Pending += bs.Pending
		st.PendingQty += bs.PendingQty
		if !bs.OldestReservedAt.IsZero() && (st.OldestReservedAt.IsZero() || bs.OldestReservedAt.Before(st.OldestReservedAt)) {
			st.OldestReservedAt = bs.OldestReservedAt
		}
	}
	return st, nil
}

func (s *Store) readBucketState(ctx context.Context, itemID int64, bucket int) (State, error) {
	k := BucketKeys(itemID, bucket)
	pipe := s.rdb.Pipeline()
	stockCmd := pipe.Get(ctx, k.Stock)
	metaCmd := pipe.HMGet(ctx, k.Meta, "start_ms", "end_ms", "limit", "buckets")
	buyersCmd := pipe.HLen(ctx, k.Holders)
	pendCmd := pipe.HLen(ctx, k.Reservations)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return State{}, unavailable("stock: read state", err)
	}
	var st State
	if v, err := stockCmd.Int64(); err == nil {
		st.Stock, st.Warmed = v, true
	}
	if m := metaCmd.Val(); len(m) == 4 && m[0] != nil {
		a, _ := strconv.ParseInt(fmt.Sprint(m[0]), 10, 64)
		b, _ := strconv.ParseInt(fmt.Sprint(m[1]), 10, 64)
		st.StartsAt, st.EndsAt = time.UnixMilli(a).UTC(), time.UnixMilli(b).UTC()
		st.PerUserLimit, _ = strconv.Atoi(fmt.Sprint(m[2]))
		st.Buckets = ParseBuckets(m[3])
	} else {
		st.Warmed = false
	}
	st.Buyers = buyersCmd.Val()
	st.Pending = pendCmd.Val()
	if st.Pending > 0 {
		err := s.ScanBucketReservations(ctx, itemID, bucket, func(r Reservation) error {
			st.PendingQty += int64(r.Qty)
			if st.OldestReservedAt.IsZero() || r.ReservedAt.Before(st.OldestReservedAt) {
				st.OldestReservedAt = r.ReservedAt
			}
			return nil
		})
		if err != nil {
			return State{}, err
		}
	}
	return st, nil
}

// Snapshot is the MySQL state Warm copies into Redis.
type Snapshot struct {
	ItemID int64
	// Stock is MySQL's stock of an unbucketed item. A bucketed item has
	// BucketStock instead, one entry per bucket, and its bucket count is
	// len(BucketStock).
	Stock       int64
	BucketStock []int64
	// PrevBuckets is the bucket count Redis may still hold keys of (the
	// previous warm's): buckets beyond the new count are emptied and their
	// meta says the new count, so an ingress that still uses the old one is
	// told (Moved) instead of admitting from a bucket that no longer exists.
	PrevBuckets  int
	StartsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
	// Buyers are the users holding an order (any status) for the item, with
	// the request id of that order; each goes to their home bucket.
	Buyers []Holder
	// UnappliedRestores are the cancelled orders whose MySQL restore Redis
	// has not seen: the stock already counts them, so their guards are set
	// (with no TTL: their records are unmarked) in the bucket they restore to.
	UnappliedRestores []RestoreRef
	// MetaOnly refreshes the sale window and limit but keeps stock and buyers.
	MetaOnly bool
}

// RestoreRef names one restore's guard: the cancelled order's request and
// the bucket its qty goes back to.
type RestoreRef struct {
	RequestID string
	Bucket    int
}

// Buckets returns the snapshot's bucket count.
func (snap Snapshot) Buckets() int { return max(len(snap.BucketStock), 1) }

// Warm rebuilds the item's Redis state from snap, bucket by bucket (each
// bucket is its own slot, so one script each). It returns ErrPending while
// reservations of the item wait for their outcome (unless Redis lost the
// bucket's stock key, when there is nothing left to protect); the caller
// (pkg/catalog) checks every bucket for pending reservations before it
// starts, so a refusal comes before any bucket was rewritten unless a
// request was admitted in between.
func (s *Store) Warm(ctx context.Context, snap Snapshot) error {
	n := snap.Buckets()
	// Registered before the warm, so the registry holds every item that
	// can have reservations (ReservedItems).
	if err := s.rdb.SAdd(ctx, WarmedItems, snap.ItemID).Err(); err != nil {
		return unavailable("stock: register warmed item", err)
	}
	buyers := make([][]Holder, n)
	for _, h := range snap.Buyers {
		b := HomeBucket(h.UserID, n)
		buyers[b] = append(buyers[b], h)
	}
	guards := make([][]string, n)
	for _, r := range snap.UnappliedRestores {
		b := r.Bucket % n
		guards[b] = append(guards[b], r.RequestID)
	}
	for b := range n {
		st := snap.Stock
		if len(snap.BucketStock) > 0 {
			st = snap.BucketStock[b]
		}
		if err := s.warmBucket(ctx, snap, b, n, st, buyers[b], guards[b]); err != nil {
			return err
		}
	}
	for b := n; b < snap.PrevBuckets && !snap.MetaOnly; b++ {
		if err := s.retireBucket(ctx, snap.ItemID, b, n); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) warmBucket(ctx context.Context, snap Snapshot, bucket, n int, stock int64, buyers []Holder, guards []string) error {
	k := BucketKeys(snap.ItemID, bucket)
	keys := []string{k.Stock, k.Meta, k.Holders, k.Reservations, k.HolderBits}
	for _, rid := range guards {
		keys = append(keys, k.RestoreGuard(rid))
	}
	args := make([]any, 0, 7+3*len(buyers))
	args = append(args, stock, snap.StartsAt.UnixMilli(), snap.EndsAt.UnixMilli(), snap.PerUserLimit, flag(snap.MetaOnly), n, len(buyers))
	for _, b := range buyers {
		args = append(args, b.UserID, b.RequestID)
	}
	for _, b := range buyers {
		args = append(args, HolderBit(b.UserID))
	}
	res, err := warmScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		return unavailable("stock: warm", err)
	}
	if len(res) == 2 && res[0] == "pending" {
		return fmt.Errorf("%w: %s reservations of item %d bucket %d", ErrPending, res[1], snap.ItemID, bucket)
	}
	return nil
}

// retireBucket empties a bucket beyond the item's new count n: no stock, no
// buyers, and a meta that says only n, so admit.lua answers Moved.
func (s *Store) retireBucket(ctx context.Context, itemID int64, bucket, n int) error {
	k := BucketKeys(itemID, bucket)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, k.Stock, k.Meta, k.Holders, k.HolderBits, k.Want)
		p.HSet(ctx, k.Meta, "buckets", n)
		return nil
	})
	if err != nil {
		return unavailable("stock: retire bucket", err)
	}
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Holder is one buyer mark: the user and the request by which they hold
// the item.
type Holder struct {
	UserID    int64
	RequestID string
}

// HeldBy returns the request id by which user holds the item in Redis (in
// bucket, the user's home bucket), if any, and whether Redis has the bucket
// at all (a warmed item's buyer marks
// are complete: warm copies every order holder from MySQL, and every
// admission adds its own). One round trip.
func (s *Store) HeldBy(ctx context.Context, itemID int64, bucket int, userID int64) (rid string, held, warmed bool, err error) {
	k := BucketKeys(itemID, bucket)
	var hget *redis.StringCmd
	var exists *redis.IntCmd
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hget = p.HGet(ctx, k.Holders, strconv.FormatInt(userID, 10))
		exists = p.Exists(ctx, k.Stock)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", false, false, unavailable("stock: held by", err)
	}
	rid, herr := hget.Result()
	return rid, herr == nil, exists.Val() == 1, nil
}

// IdempotencyAnswer reads an Idempotency-Key's first request id and whether
// its publish was acknowledged (see Ack); found is false once the key is
// gone (expired, or released after an abort).
func (s *Store) IdempotencyAnswer(ctx context.Context, itemID int64, bucket int, userID int64, idempotencyKey string) (rid string, acked, found bool, err error) {
	v, err := s.rdb.Get(ctx, BucketKeys(itemID, bucket).Idempotency(userID, idempotencyKey)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, false, nil
	}
	if err != nil {
		return "", false, false, unavailable("stock: idempotency answer", err)
	}
	rid, acked = strings.CutSuffix(v, ":a")
	return rid, acked, true, nil
}

// Ack records on a keyed request's Idempotency-Key answer that Kafka
// acknowledged its message, so a replay of the key may answer 202. It
// reports false when the key no longer names requestID (expired, or
// released after an abort).
func (s *Store) Ack(ctx context.Context, itemID, userID int64, idempotencyKey, requestID string) (bool, error) {
	n, err := s.run(ctx, ackScript, []string{RequestKeys(itemID, requestID).Idempotency(userID, idempotencyKey)}, requestID).Int()
	if err != nil {
		return false, unavailable("stock: ack", err)
	}
	return n == 1, nil
}
