// Package rebalance moves stock between the buckets of a bucketed item
// (pkg/stock, buckets.go) toward the buckets whose buyers find them short,
// exactly once in MySQL and in Redis. It runs in the reaper.
//
// A move is a transfer with a stock_transfers row and three writes in two
// stores, each idempotent on its own. The package owns all of it: the row's
// statements (transfers_sql.go, movesql.go), the Redis steps (steps.go) and
// their scripts (lua/, scripts.go); the lease is pkg/lease's, shared with the
// waiting room's gate. pkg/store keeps the row's shape and the reads of it
// others make (a warm refuses while one is open, the auditor counts them);
// pkg/stock keeps the key names of the live/done marks, and pkg/bucketview
// the reads of them that the ingress and the audit make.
//
//  1. PlanTransfer inserts the row PLANNED; the id joins the item's
//     TransfersLive in Redis before any stock moves, so the ingress's
//     check (bucketview.Snapshot, judged by Snapshot.SoldOut in
//     pkg/admission) never sees units in flight as "gone".
//  2. transfer_out.lua takes the qty from the donor's Redis stock, or
//     finds it short (or the bucket gone), once: its guard keeps the
//     answer, so every later run of the step answers the same.
//     Short: the row becomes ABANDONED and nothing moved anywhere.
//  3. moveTransfer, one MySQL transaction: PLANNED -> MOVED, and the qty
//     off the donor's stock and total and onto the recipient's. Holding
//     both bucket rows locked it runs transfer_cut.lua, which normally
//     only answers the qty. A donor row short of what Redis took (Redis was
//     above MySQL, as a failover without WAIT leaves it) cuts the transfer
//     to what MySQL has free (DONE with that qty, or ABANDONED with none)
//     and reconciles the Redis donor down to MySQL, once: the transfer
//     ends instead of being retried for ever.
//  4. transfer_in.lua gives the qty to the recipient's Redis stock once and
//     clears its want flag; then MOVED -> DONE.
//  5. The guards get a TTL and the id leaves TransfersLive (TransfersDone
//     counts it).
//
// The row's state says which write comes next, so a mover that dies between
// any two leaves a transfer the next pass (of any replica) drives on from
// there with the same steps; two movers driving one transfer at once change
// each store once (the guards in Redis, the state CAS in MySQL). Redis is
// always taken from before MySQL and given to after it, so a bucket's Redis
// stock never exceeds what MySQL holds for it and its pending reservations:
// the consumer always finds the stock it was promised.
//
// A transfer of kind WAITLIST (waitlist.go) moves units of a bucketed item's
// waitlist from one bucket's pool to another's, for the waiting room's gate,
// which reaches MovePool and ResumePool through its PoolMover: the same row,
// states, MySQL step, marks and guards, with its own Redis steps
// (lua/waitlist_out.lua, waitlist_in.lua) on the buckets' waitlist hashes.
// Every pass resumes open transfers of either kind.
//
// The policy (policy.go) is a pure function of the buckets' stocks and want
// flags; the loop (loop.go) finishes open transfers first, then plans. One
// replica at a time moves, by a lease taken and renewed in one script
// (pkg/lease); correctness does not depend on it.
//
// It also owns the lease name fs:rebalance:lease (RebalanceLease), the wake-up
// subscription (wake.go) and the metrics flashsale_bucket_transfers_total,
// flashsale_bucket_transfer_units_total, flashsale_rebalance_lease_held,
// flashsale_rebalance_pass_failures_total and
// flashsale_rebalance_pass_duration_seconds.
//
// Only the reaper's main imports it (and hands the gate a Rebalancer as its
// pkg/waitroom PoolMover). It imports pkg/lease, pkg/stock and
// pkg/store, and never the HTTP layer or pkg/admission: the ingress sees
// transfers only through the Redis marks pkg/stock names and pkg/bucketview
// reads (as this package's tests judge "sold out").
package rebalance
