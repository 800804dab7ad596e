// Package history records what flashsale's clients did and saw (every
// order, status poll, long poll, pay and held-order lookup, with its invoke
// and return time on one monotonic clock, its inputs and its answer) and
// checks the history against a sequential model of a sale with porcupine.
//
// The end-state audit (pkg/audit, I1–I7) sees only what is left at
// quiescence. A history sees what buyers were told on the way: a 202 for a
// request that never existed, a status that went backwards, a buyer told
// "nothing reserved" who holds the item afterwards. This package is what
// catches those.
//
// # The promise checked
//
// Check accepts a history (Verdict Ok) only if both hold:
//
//  1. Per buyer and item, the buyer's operations are linearizable with
//     respect to the buyer model (model.go). The model's state is the
//     buyer's requests, each with an id, its Idempotency-Key and a status
//     in none < PENDING < UNPAID < PAID | CANCELLED, or PENDING/none <
//     REJECTED. Between operations the server may move a request forward on
//     its own (PENDING → UNPAID, UNPAID → CANCELLED, PENDING → REJECTED; an
//     outcome_unknown request that reserved nothing may still be decided
//     REJECTED); PAID is reached only through a pay the client sent. The
//     operations:
//     - order answered 202 request_id R: a replay of the request of the same
//     Idempotency-Key, or a new request R in PENDING, which is allowed
//     only if the buyer holds nothing (a PENDING holder may have been
//     REJECTED just before);
//     - order answered 409 already_purchased R: R is the buyer's holding
//     request (PENDING, UNPAID, PAID or CANCELLED: a cancelled order still
//     holds, I2);
//     - order answered 503 outcome_unknown R: R may or may not have
//     reserved (both branches are kept);
//     - order with no answer (a timeout, a lost connection, an unexpected
//     5xx): it may have created a request whose id the client never
//     learned, at any time after its call; such a request is named only by
//     a later 409, held lookup or replay;
//     - order answered 410, 429, 404 unknown_item, 409 sale_not_active,
//     503 stock_moving (or any 4xx): no effect;
//     - order answered 503 unavailable: nothing reserved by the answer. The
//     ingress may have reserved during the call and released before
//     answering (a failed publish whose ABORTED won), and a concurrent call
//     of the buyer may have seen that request (a 409 naming it); the model
//     lets the call create such a request, which must be REJECTED the
//     instant after the answer;
//     - status 200 S of R: R's status is S, reachable from its last status
//     by the server's own moves (never backwards); 404: the server does not
//     know R (only an outcome_unknown request that reserved nothing);
//     anything else says nothing;
//     - pay 200: R becomes PAID (from PENDING, UNPAID or PAID); 409
//     not_payable: R is not PAID; 404: R unknown; no answer or 5xx: R may
//     or may not have become PAID;
//     - held 200 R S: as a status of R, and R is a request of the buyer;
//     404: the buyer holds nothing.
//
//  2. Across buyers (stock.go): at no instant do more units have evidence of
//     being held than the item's total. A request is certainly holding its
//     qty from the return of its 202 (or of the first answer that shows it
//     exists) to the call of the last poll that answered PENDING, and for
//     ever once it was seen PAID or paid. UNPAID is not counted as evidence,
//     since the status cache may show UNPAID for a moment after the reaper
//     gave the unit back (the cache is filled after each writer's commit).
//
// Splitting the check this way is sound: each half is implied by the
// sequential model of the whole sale (one stock count plus every buyer's
// requests), so a history of a correct run is never rejected; it is weaker
// than a check of the whole sale at once, which porcupine cannot do in
// reasonable time for thousands of operations on one shared counter. What it
// does not see: an oversell whose evidence is only UNPAID polls, and a 410
// sold_out while units were free (a liveness matter; 410 is a no-op here).
//
// A porcupine Unknown (the timeout passed) is never reported as Ok.
//
// It owns the recorder (recorder.go, transport.go: an http.RoundTripper that
// records every call) and the models; it holds no store state. Only the fault
// suite's tests import it (faults/history_test.go). It imports pkg/reqid and
// porcupine, and no other package of the module: it sees flashsale only as its
// clients do, over HTTP.
package history
