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
	f := &flight{done: make(chan struct{})}
	if v, loaded := k.m.LoadOrStore(key, f); loaded {
		other := v.(*flight)
		select {
		case <-other.done:
		case <-ctx.Done():
			// Nothing was attempted for this copy: a retry replays.
			return Result{Outcome: StockMoving, RetryAfter: time.Second}, false, nil
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
