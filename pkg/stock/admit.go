package stock

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Admission: one buyer's attempt at an item, decided by lua/admit.lua in
// the buyer's home bucket.

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
	// NeedGrant: the item has a waiting room and the request was not
	// Granted; nothing was done.
	NeedGrant AdmitCode = "need_grant"
	// NoOffer: a Claim of a waitlist offer the buyer does not hold (claimed
	// already, lapsed, or never made); nothing was done.
	NoOffer AdmitCode = "no_offer"
	// KeyReused: the Idempotency-Key was first sent with another request
	// (AdmitRequest.Fingerprint differs); nothing was done.
	KeyReused AdmitCode = "key_reused"
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
	// Fingerprint names the request an Idempotency-Key was sent with (the
	// caller's hash of what it asks); the same key with another fingerprint
	// answers KeyReused. Empty: not checked.
	Fingerprint string
	// Granted is the caller's word that it checked the buyer's admission
	// grant for this item (pkg/waitroom); an item with a waiting room refuses
	// a request without it (NeedGrant).
	Granted bool
	// Claim is the caller's word that it checked the buyer's waitlist
	// offer grant (pkg/waitroom, waitlist.go): the order takes the unit the
	// buyer's offer holds, not the stock's, or answers NoOffer.
	Claim bool
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
	// The waitlist's keys only for a claim, made in the buyer's home
	// bucket, which holds their offer (Keys.Offers): as the want flag, a
	// key that is not used is one that exists.
	offersKey, waitlistKey, claimsKey, grant := k.Stock, k.Stock, k.Stock, flag(r.Granted)
	if r.Claim {
		offersKey, waitlistKey, claimsKey, grant = k.Offers, k.Waitlist, k.Claims, "2"
	}
	keys := []string{k.Stock, k.Meta, k.Holders, k.Reservations, idemKey, rateKey, k.HolderBits, wantKey, offersKey, waitlistKey, claimsKey}
	args := []any{r.UserID, r.Qty, r.RequestID, deadlineMs(r.Deadline), r.UserRatePerSec,
		r.IdempotencyTTL.Milliseconds(), hasIdem, HolderBit(r.UserID), max(r.Buckets, 1), wantTTL.Milliseconds(), grant, r.Fingerprint}
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
	case Replay, ReplayUnacked, Already, KeyReused:
		out.RequestID = res[1]
	case RateLimited:
		ms, _ := strconv.ParseInt(res[1], 10, 64)
		out.RetryAfter = time.Duration(max(ms, 1)) * time.Millisecond
	case OverLimit:
		out.Limit, _ = strconv.Atoi(res[1])
	case Moved:
		out.Buckets, _ = strconv.Atoi(res[1])
	case Unknown, NotActive, Late, NeedGrant, NoOffer:
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

// LowerWant keeps bucket's want flag up for a buyer waiting there, and no
// higher than its qty (want_lower.lua), for the want TTL the admission
// script gives it. Best effort: the caller ignores a failure (the buyer's
// next look tries again).
func (s *Store) LowerWant(ctx context.Context, itemID int64, bucket, qty int) error {
	return wantLowerScript.Run(ctx, s.rdb, []string{BucketKeys(itemID, bucket).Want}, qty, wantTTL.Milliseconds()).Err()
}
