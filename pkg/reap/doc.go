// Package reap is the reaper's work: a periodic pass that
//
//  1. re-applies MySQL restores Redis has not confirmed yet (a crash or a
//     Redis outage between the two stores is repaired here),
//  2. finishes the stock changes a crash left PENDING (pkg/stockchange,
//     Repair),
//  3. cancels UNPAID orders past their payment window in batches claimed with
//     SKIP LOCKED, restoring MySQL stock in the same transaction and then
//     Redis stock through the per-order guarded Lua restore, and
//  4. sweeps orphaned reservations (Redis reserved, no outcome in the arbiter
//     after the grace) by voiding them through the arbiter.
//
// Every step is safe to repeat and to run in several replicas at once: MySQL
// effects are decided by row locks and status CAS, Redis effects are guarded
// per order (restore) or per reservation (release). A failing pass is logged,
// counted and simply run again next interval.
//
// It owns the pass and the flashsale_reaper_* and
// flashsale_orphan_grace_seconds metrics, and the sweep's scan for items that
// hold reservations (reserved.go: the registry of warmed items and one
// existence check per item, read over the ledger's client; the keys are
// pkg/stock's). The statements are pkg/store's, the guarded Redis steps
// pkg/stock's, a pending change's repair pkg/stockchange's, and the status it
// caches pkg/orderstatus's.
//
// Only the reaper's main imports it. It never imports the HTTP layer,
// pkg/admission or pkg/orderwriter: it meets them only through the stores (the
// arbiter table, the orders' status, Redis' guards).
package reap
