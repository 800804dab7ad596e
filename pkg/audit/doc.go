// Package audit checks the invariants I1–I7 and I9 (the waitlist) of docs/design.md for one item from
// MySQL and Redis, with the numbers. The ingress serves it to operators; the
// bench tool, the fault tests and a periodic auditor call the same function.
//
// It reads a consistent cut (cut.go): Redis first, each bucket in one
// MULTI/EXEC of its slot, then MySQL in one REPEATABLE READ snapshot, so a
// busy but healthy item passes while orders flow. What is legitimately "in
// between" is counted once: reservations already decided ORDERED
// (committed, not yet settled in Redis), and restores committed in MySQL
// whose guard the cut did not see (not yet given back to Redis), however
// long the reaper's mark is held up. What the cut cannot see (a restore
// applied and marked between the two reads, a bucket with too many
// reservations to read in one step) is brief, and cut.go names it.
//
// A bucketed item is checked as a whole and bucket by bucket (buckets.go):
// the item's sums cannot see a unit that sits in the wrong bucket in one
// store only. Its waitlist is one share per bucket: I9 is checked for each
// share (each is read in one step, so it balances at every moment) and for
// the sum, which must show nothing moving between two shares while no
// transfer is open; each share's pool and offers count in its bucket's I3.
//
// It owns no state and writes nothing: it reads MySQL with its own SELECTs
// (items, item_buckets, orders, request_outcomes, stock_restores,
// stock_changes; all but the stock changes' fence in one read-only
// REPEATABLE READ transaction) and Redis through the read calls of the packages that own each
// part of it (pkg/stock the ledger and its cut, pkg/bucketview the transfer
// marks, pkg/stockchange a pending change's guards, pkg/waitroom the
// waitlist, queued in the same cut), so
// it may run at any time on a live sale. Its Report, BucketReport and
// Waitlist are the JSON of the admin API's audit, live and queue views:
// aliases of pkg/api's AuditReport, AuditBucket and Waitlist, declared there
// so a client of the API (flashsalectl) decodes them without linking this
// package.
//
// Importers: pkg/httpapi (the admin audit and the live view), pkg/auditor
// (the periodic audit), the bench tool and the fault suite's tests. It
// imports pkg/api (the report's types), the store clients (pkg/store,
// pkg/stock), pkg/bucketview for the transfer marks, pkg/stockchange for its
// guards' read and Spread, the rule that splits a change over the buckets,
// and pkg/waitroom for its waitlist's read. It never imports the HTTP layer,
// pkg/orderlog, or the workers whose results it checks (orderwriter, reap,
// rebalance; of pkg/waitroom, whose gate is one, it calls only the waitlist's
// read): it judges what the stores hold, not what the code meant to write.
package audit
