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
}

// New returns a Store on rdb.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// Client returns the underlying client (for health checks).
func (s *Store) Client() redis.UniversalClient { return s.rdb }

func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// AdmitCode is the admission script's verdict.
type AdmitCode string

// Admission verdicts; see lua/admit.lua.
const (
	Admitted    AdmitCode = "ok"
	Replay      AdmitCode = "replay"
	Unknown     AdmitCode = "unknown"
	NotActive   AdmitCode = "not_active"
	OverLimit   AdmitCode = "over_limit"
	RateLimited AdmitCode = "rate_limited"
	Already     AdmitCode = "already"
	SoldOut     AdmitCode = "sold_out"
)

// AdmitRequest is one buyer's attempt.
type AdmitRequest struct {
	ItemID    int64
	UserID    int64
	Qty       int
	RequestID string
	// Now is informational: the script judges the sale window and stamps the
	// reservation with the Redis server's TIME.
	Now time.Time
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
	// RequestID is the first request's id for Replay.
	RequestID string
	// RetryAfter is set for RateLimited.
	RetryAfter time.Duration
	// Limit is the per-user limit for OverLimit.
	Limit int
}

// Admit runs the admission script: one round trip.
func (s *Store) Admit(ctx context.Context, r AdmitRequest) (AdmitResult, error) {
	k := KeysOf(r.ItemID)
	idemKey, hasIdem := k.Stock, "0" // a key of the same slot, never read when unused
	if r.IdempotencyKey != "" {
		idemKey, hasIdem = k.Idempotency(r.UserID, r.IdempotencyKey), "1"
	}
	rateKey := k.Stock
	if r.UserRatePerSec > 0 {
		rateKey = k.UserRate(r.UserID)
	}
	res, err := admitScript.Run(ctx, s.rdb,
		[]string{k.Stock, k.Meta, k.Buyers, k.Reservations, idemKey, rateKey},
		r.UserID, r.Qty, r.RequestID, r.Now.UnixMilli(), r.UserRatePerSec,
		r.IdempotencyTTL.Milliseconds(), hasIdem,
	).StringSlice()
	if err != nil {
		return AdmitResult{}, unavailable("stock: admit", err)
	}
	if len(res) != 2 {
		return AdmitResult{}, fmt.Errorf("stock: admit: unexpected reply %q", res)
	}
	out := AdmitResult{Code: AdmitCode(res[0])}
	switch out.Code {
	case Admitted, SoldOut:
		out.StockLeft, _ = strconv.ParseInt(res[1], 10, 64)
	case Replay:
		out.RequestID = res[1]
	case RateLimited:
		ms, _ := strconv.ParseInt(res[1], 10, 64)
		out.RetryAfter = time.Duration(max(ms, 1)) * time.Millisecond
	case OverLimit:
		out.Limit, _ = strconv.Atoi(res[1])
	case Unknown, NotActive, Already:
	default:
		return AdmitResult{}, fmt.Errorf("stock: admit: unknown verdict %q", res[0])
	}
	return out, nil
}

// ReleaseOptions says what a release gives back.
type ReleaseOptions struct {
	// ReturnStock gives the qty back to the Redis stock (ABORTED, VOIDED,
	// duplicate_buyer). Not for sold_out: MySQL had no stock to match it.
	ReturnStock bool
	// RemoveBuyer clears the buyer mark so the buyer may try again.
	RemoveBuyer bool
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
	k := KeysOf(itemID)
	extra, dropIdem := k.Stock, "0" // a key of the same slot, never touched when unused
	if o.IdempotencyKey != "" {
		extra, dropIdem = k.Idempotency(o.UserID, o.IdempotencyKey), "1"
	}
	return []string{k.Stock, k.Buyers, k.Reservations, extra},
		[]any{requestID, flag(o.ReturnStock), flag(o.RemoveBuyer), dropIdem}
}

// Settle drops the reservations of requests that became orders.
func (s *Store) Settle(ctx context.Context, itemID int64, requestIDs []string) error {
	if len(requestIDs) == 0 {
		return nil
	}
	args := make([]any, len(requestIDs))
	for i, id := range requestIDs {
		args[i] = id
	}
	if err := settleScript.Run(ctx, s.rdb, []string{KeysOf(itemID).Reservations}, args...).Err(); err != nil {
		return unavailable("stock: settle", err)
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

// Restore gives the qty of requestID's cancelled order back to Redis exactly
// once. Its guard has no TTL until ExpireRestoreGuards, after the mark.
func (s *Store) Restore(ctx context.Context, itemID int64, requestID string, qty int) (RestoreResult, error) {
	k := KeysOf(itemID)
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
	v, err := s.rdb.HGet(ctx, KeysOf(itemID).Reservations, requestID).Result()
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
// HSCAN pages (no blocking HGETALL on a big hash).
func (s *Store) ScanReservations(ctx context.Context, itemID int64, fn func(Reservation) error) error {
	key := KeysOf(itemID).Reservations
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

// State is an item's Redis state, for audits and the public view.
type State struct {
	Warmed       bool
	Stock        int64
	Buyers       int64
	Pending      int64 // reservations
	PendingQty   int64
	StartsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
}

// Stock returns the Redis stock of an item and whether the item is warmed.
func (s *Store) Stock(ctx context.Context, itemID int64) (int64, bool, error) {
	v, err := s.rdb.Get(ctx, KeysOf(itemID).Stock).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, unavailable("stock: get", err)
	}
	return v, true, nil
}

// ReadState reads an item's whole Redis state. The reads are not one atomic
// snapshot; audits read it at quiescence.
func (s *Store) ReadState(ctx context.Context, itemID int64) (State, error) {
	k := KeysOf(itemID)
	pipe := s.rdb.Pipeline()
	stockCmd := pipe.Get(ctx, k.Stock)
	metaCmd := pipe.HMGet(ctx, k.Meta, "start_ms", "end_ms", "limit")
	buyersCmd := pipe.SCard(ctx, k.Buyers)
	pendCmd := pipe.HLen(ctx, k.Reservations)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return State{}, unavailable("stock: read state", err)
	}
	var st State
	if v, err := stockCmd.Int64(); err == nil {
		st.Stock, st.Warmed = v, true
	}
	if m := metaCmd.Val(); len(m) == 3 && m[0] != nil {
		a, _ := strconv.ParseInt(fmt.Sprint(m[0]), 10, 64)
		b, _ := strconv.ParseInt(fmt.Sprint(m[1]), 10, 64)
		st.StartsAt, st.EndsAt = time.UnixMilli(a).UTC(), time.UnixMilli(b).UTC()
		st.PerUserLimit, _ = strconv.Atoi(fmt.Sprint(m[2]))
	} else {
		st.Warmed = false
	}
	st.Buyers = buyersCmd.Val()
	st.Pending = pendCmd.Val()
	if st.Pending > 0 {
		err := s.ScanReservations(ctx, itemID, func(r Reservation) error {
			st.PendingQty += int64(r.Qty)
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
	ItemID       int64
	Stock        int64 // MySQL items.stock
	StartsAt     time.Time
	EndsAt       time.Time
	PerUserLimit int
	// Buyers are the users holding an order (any status) for the item.
	Buyers []int64
	// UnappliedRestores are the request ids of cancelled orders whose MySQL
	// restore Redis has not seen: Stock already counts them, so their guards
	// are set (with no TTL: their records are unmarked).
	UnappliedRestores []string
	// MetaOnly refreshes the sale window and limit but keeps stock and buyers.
	MetaOnly bool
}

// Warm rebuilds the item's Redis state from snap. It returns ErrPending while
// reservations of the item wait for their outcome (unless Redis lost the
// item's stock key, when there is nothing left to protect).
func (s *Store) Warm(ctx context.Context, snap Snapshot) error {
	k := KeysOf(snap.ItemID)
	keys := []string{k.Stock, k.Meta, k.Buyers, k.Reservations}
	for _, rid := range snap.UnappliedRestores {
		keys = append(keys, k.RestoreGuard(rid))
	}
	args := []any{snap.Stock, snap.StartsAt.UnixMilli(), snap.EndsAt.UnixMilli(), snap.PerUserLimit,
		0, flag(snap.MetaOnly)}
	for _, b := range snap.Buyers {
		args = append(args, b)
	}
	res, err := warmScript.Run(ctx, s.rdb, keys, args...).StringSlice()
	if err != nil {
		return unavailable("stock: warm", err)
	}
	if len(res) == 2 && res[0] == "pending" {
		return fmt.Errorf("%w: %s reservations of item %d", ErrPending, res[1], snap.ItemID)
	}
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ErrTooMany is returned by Buyers when the set is larger than asked for.
var ErrTooMany = errors.New("stock: set larger than the limit")

// Buyers returns the item's buyer marks (users holding a reservation or an
// order), or ErrTooMany when there are more than limit.
func (s *Store) Buyers(ctx context.Context, itemID int64, limit int64) ([]int64, error) {
	key := KeysOf(itemID).Buyers
	n, err := s.rdb.SCard(ctx, key).Result()
	if err != nil {
		return nil, unavailable("stock: buyers", err)
	}
	if n > limit {
		return nil, fmt.Errorf("%w: %d buyers of item %d", ErrTooMany, n, itemID)
	}
	members, err := s.rdb.SMembers(ctx, key).Result()
	if err != nil {
		return nil, unavailable("stock: buyers", err)
	}
	out := make([]int64, 0, len(members))
	for _, m := range members {
		id, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("stock: malformed buyer %q of item %d", m, itemID)
		}
		out = append(out, id)
	}
	return out, nil
}
