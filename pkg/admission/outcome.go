package admission

import "time"

// Outcome is how one admission attempt ended. The HTTP layer maps it to a
// status code; the metrics label admissions by it (a bounded set).
type Outcome string

// Outcomes.
const (
	Accepted    Outcome = "accepted"     // reserved and durably published: 202
	Replayed    Outcome = "replayed"     // Idempotency-Key seen before: the first 202
	UnknownItem Outcome = "unknown_item" // not warmed in Redis: 404
	NotActive   Outcome = "not_active"   // outside the sale window: 409
	NeedGrant   Outcome = "need_grant"   // a queued item without a checked admission grant: 403
	NoOffer     Outcome = "no_offer"     // a waitlist claim of an offer the buyer does not hold: 403
	OverLimit   Outcome = "over_limit"   // qty above the per-user limit: 400
	RateLimited Outcome = "rate_limited" // per-user window: 429
	Already     Outcome = "already"      // the user holds this item (RequestID says by which request): 409
	// KeyReused: the Idempotency-Key was first sent with another request
	// (another qty, or a claim where it was an order): 422, nothing taken.
	// A silent replay would tell the client it holds what it asked for the
	// second time. RequestID is the key's first request.
	KeyReused  Outcome = "key_reused"
	SoldOut    Outcome = "sold_out"     // from Redis: 410
	SoldOutMem Outcome = "sold_out_mem" // from the in-memory flag: 410
	Shed       Outcome = "shed"         // in-process limiter: 503
	// StockMoving: the buyer's home bucket is empty while other buckets of
	// the item still have stock, and the rebalancer did not move any here
	// within the bucket wait. 503 with Retry-After; nothing is reserved.
	StockMoving Outcome = "stock_moving"
	// Unavailable: Redis could not be reached, or it did not confirm and the
	// request was then decided ABORTED and released: 503, and it is known
	// that nothing is reserved.
	Unavailable Outcome = "unavailable"
	// PublishFailed: Kafka did not acknowledge; the arbiter says ABORTED and
	// the reservation was released. 503, nothing reserved.
	PublishFailed Outcome = "publish_failed"
	// Unconfirmed: the outcome is not known yet (a reply was lost and the
	// compensation could not be confirmed, or the first request of a replayed
	// Idempotency-Key was never confirmed published). 503 carrying RequestID:
	// polling it gives the final answer, and the buyer is never told that
	// nothing was reserved.
	Unconfirmed Outcome = "outcome_unknown"
)

// Result is the answer to one attempt.
type Result struct {
	Outcome Outcome
	// RequestID is set for Accepted, Replayed, Already and Unconfirmed.
	RequestID string
	// RetryAfter is set for RateLimited, Shed and StockMoving: how long the
	// buyer should wait before asking again (the Retry-After header).
	RetryAfter time.Duration
	// Limit is the per-user limit for OverLimit.
	Limit int
}

// OK reports whether the buyer gets a 202.
func (r Result) OK() bool { return r.Outcome == Accepted || r.Outcome == Replayed }
