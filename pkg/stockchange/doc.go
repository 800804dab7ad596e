// Package stockchange restocks and withdraws units of an item while it
// sells, exactly once in both stores, whatever crashes and retries.
//
// An operation is (item, signed delta, operation id). The id makes it
// idempotent: a stock_changes row keyed by it (pkg/store) and, in each
// bucket's Redis slot, a guard keyed by it (Store, lua/stock_change.lua)
// that keeps what the bucket's stock changed by. The order of the writes is
// the rebalancer's rule, "Redis is taken from before MySQL and given to
// after it", so Redis never holds a unit MySQL does not, and the consumer
// always finds the unit Redis admitted:
//
//   - restock (delta > 0): one MySQL transaction inserts the PENDING row and
//     adds delta to items.total_stock and the stock rows (spread evenly over
//     the buckets, Spread); then each bucket's Redis stock gets its share
//     under its guard; then the row is marked APPLIED.
//   - withdraw (delta < 0): one MySQL transaction inserts the PENDING row
//     (the intent; no stock changes); then each bucket's Redis stock gives
//     what it holds now, at most what is still asked, under its guard (so
//     only units nobody holds are taken: reservations and orders are out of
//     Redis' stock already); then one MySQL transaction takes exactly the
//     units Redis gave from the rows and the total and marks the row APPLIED
//     with them. The withdraw policy is "take what is free and say how
//     many": a bucketed item's buckets live in different Redis slots, so
//     "all or nothing" would need a give-back step that a crash can strand.
//
// A crash between any two writes leaves the row PENDING, and Apply, run
// again by a retried call or by the reaper's pass (Repair), finishes it:
// the guards answer what each bucket already did, so Redis changes once,
// and the MySQL steps are CASes on the row's state, so MySQL changes once.
// A withdraw's buckets are asked in bucket order, each for what the earlier
// ones' guards left, so every applier asks every bucket the same thing.
//
// The audit (pkg/audit) counts a PENDING change exactly from its row and its
// guards: what MySQL has changed by so far (a restock's share, 0 for a
// withdraw) less what the bucket's guard says Redis changed by. A warm, a
// PUT of a new stock and a new bucket count are refused while a change is
// PENDING (store.ErrStockChangesPending): a copy of MySQL would undo the
// half that Redis has.
//
// It owns the operation's protocol and its Redis part (Store: the guarded
// script, one file under lua/, run over the ledger's client, and the guards'
// reads and TTLs); the row's statements are pkg/store's (stockchanges.go),
// and the guard's key name pkg/stock's (Keys.StockChangeGuard), with every
// key of a bucket. Importers: pkg/httpapi (the admin restock and withdraw),
// pkg/reap (Repair), pkg/audit (the guards of a PENDING change, and Spread)
// and pkg/service (LoadScripts, to preload the script). It imports only
// pkg/stock and pkg/store, never the HTTP layer or the reaper's packages, so
// both callers drive the same steps; pkg/stock never imports it.
package stockchange
