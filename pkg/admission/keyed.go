package admission

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// keyedFlights holds, per item, user and Idempotency-Key, the request of
// this process that is being admitted, so concurrent requests with the key
// wait for its answer instead of making attempts of their own.
//
// On an unbucketed item the script already answers them: the first records
// the key when it reserves, before the others reach the per-user rate
// limiter, so they replay. On a bucketed item whose home bucket is empty
// the first waits for the rebalancer (awaitStock) with nothing recorded,
// and each copy was a new attempt counted by the limiter: 20 copies got
// 5 x 202 and 15 x 429 rate_limited. Copies sent to other ingress replicas
// still make their own attempts (the limiter may answer them 429; their
// retry replays).
type keyedFlights struct{ m sync.Map }

// join returns first true (and done, to be called with the answer) when r
// is the only request with its key in flight here; otherwise it waits for
// the one in flight and returns its answer as a replay's (the same 202 and
// request id, or the same refusal).
func (k *keyedFlights) join(ctx context.Context, r Request) (res Result, first bool, done func(Result)) {
	key := strconv.FormatInt(r.ItemID, 10) + "/" + strconv.FormatInt(r.UserID, 10) + "/" + r.IdempotencyKey
	f := &flight{done: make(chan struct{}), fingerprint: r.fingerprint()}
	if v, loaded := k.m.LoadOrStore(key, f); loaded {
		other := v.(*flight)
		select {
		case <-other.done:
		case <-ctx.Done():
			// Nothing was attempted for this copy: a retry replays.
			return Result{Outcome: StockMoving, RetryAfter: time.Second}, false, nil
		}
		if other.fingerprint != r.fingerprint() {
			// The same key, another request: the first one's answer is not
			// this one's (idempotency.go).
			return Result{Outcome: KeyReused, RequestID: other.res.RequestID}, false, nil
		}
		if other.res.Outcome == Accepted {
			return Result{Outcome: Replayed, RequestID: other.res.RequestID}, false, nil
		}
		return other.res, false, nil
	}
	return Result{}, true, func(res Result) {
		f.res = res
		k.m.Delete(key)
		close(f.done)
	}
}

// replay answers a repeated Idempotency-Key with the first request's answer.
// If the first request is still being published by this process, it waits
// for it. Otherwise a 202 is given only when the first request's publish was
// recorded as acknowledged (acked); an unacknowledged one is being published
// by another replica, or its ingress died before publishing, and the buyer
// is told the outcome is unknown, with the request id to poll.
func (s *Service) replay(ctx context.Context, r Request, first string, acked bool) Result {
	v, ok := s.inflight.Load(first)
	if !ok {
		if acked {
			return Result{Outcome: Replayed, RequestID: first}
		}
		return s.replayUnacked(ctx, r, first)
	}
	f := v.(*flight)
	select {
	case <-f.done:
	case <-ctx.Done():
		return Result{Outcome: Unconfirmed, RequestID: first}
	}
	if f.res.OK() {
		return Result{Outcome: Replayed, RequestID: first}
	}
	return f.res
}

// replayUnacked reads the key's answer once more: the script may have read
// it just before the first request (here or on another replica) recorded
// its ack and left the in-flight set. Still unacknowledged is
// outcome_unknown; gone means the first request was aborted and released,
// so nothing is reserved and the buyer may simply retry.
func (s *Service) replayUnacked(ctx context.Context, r Request, first string) Result {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.StoreTimeout)
	rid, acked, found, err := s.stock.IdempotencyAnswer(rctx, r.ItemID, r.bucket, r.UserID, r.IdempotencyKey)
	cancel()
	switch {
	case err == nil && found && rid == first && acked:
		return Result{Outcome: Replayed, RequestID: first}
	case err == nil && !found:
		return Result{Outcome: Unavailable}
	}
	return Result{Outcome: Unconfirmed, RequestID: first}
}
