// Package gate is the waiting room's gate (issue 25): for every item with
// a queue whose sale has started, it moves the item's serving position on
// at the item's queue_rate, so tickets are admitted in the serving order
// (pkg/waitroom) at a pace the pipeline can take, not all at once.
//
// The gate runs in the reaper. One replica holds it at a time, by a Redis
// lease (pkg/lease) renewed each pass; the others wait and take over within
// the lease's TTL when the holder dies. Correctness does not rest on the
// lease: each move is one script (stock's gate_advance.lua) that admits
// what the rate allows since the last move by Redis' clock, so two movers
// at once admit at the rate, not twice it. What the gate cannot do is
// sell: an admitted ticket's holder still orders through admit.lua, which
// takes stock and enforces one order per buyer, and the ingress checks the
// grant an admitted ticket is handed (pkg/grant).
//
// With no gate running (every reaper down, or FLASHSALE_QUEUE_GATE_INTERVAL
// 0) nobody new is admitted: the queue fails closed, and the alerts say so
// (FlashsaleQueueNoGateHolder, FlashsaleQueueGateStalled).
//
// It owns the pass (gate.go), the waitlist's offers down the line
// (waitlist.go), the lease name fs:queue:gate:lease (LeaseKey), and the
// metrics flashsale_queue_waiting, flashsale_queue_admitted_total,
// flashsale_queue_gate_held, flashsale_queue_gate_held_back_total,
// flashsale_queue_gate_pass_failures_total and
// flashsale_queue_waitlist_units_total. The keys it changes are named by
// pkg/stock (QueueKeys) and the queue's rows read through pkg/store.
//
// Importers: the reaper's main, which runs it, and pkg/httpapi, which only
// reads LeaseKey to show the holder. It imports pkg/lease, pkg/stock,
// pkg/store and pkg/waitroom, and never pkg/grant or the HTTP layer: grants
// are the ingress's to sign and check.
package gate
