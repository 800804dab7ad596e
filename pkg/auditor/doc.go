// Package auditor runs the invariant audit (pkg/audit) periodically over the
// sales that can still change (live, or ended less than Auditor.Settle ago
// and not yet found settled: settled.go) and exports the result as gauges, so Prometheus can alert on
// stock drift between MySQL and Redis (I3), any violated invariant, or a
// reservation waiting so long for its outcome that the orphan sweep will
// soon void it, without anybody calling the admin endpoint.
//
// The item id is a label here: a flash sale has a handful of items, and the
// auditor watches at most MaxItems of them (the most recently started), so
// the label's cardinality stays bounded; an item that leaves that set (its
// sale settled, or MaxItems newer sales started) loses its series. A bucketed item's buckets are labelled by index too (buckets.go),
// below MaxBuckets: never a user id.
//
// It owns the metrics it exports (flashsale_audit_violations,
// flashsale_audit_failures_total, flashsale_audit_item_failures_total,
// flashsale_audit_transient_total,
// flashsale_audit_last_success_timestamp_seconds, flashsale_stock_units,
// flashsale_stock_drift_units, flashsale_stock_pending_units,
// flashsale_orders_units, flashsale_oldest_reservation_age_seconds, the
// transfer gauges flashsale_stock_transfers_open,
// flashsale_stock_transfers_done and
// flashsale_stock_transfer_oldest_open_age_seconds, and the per-bucket
// flashsale_bucket_stock_units, flashsale_bucket_pending_units,
// flashsale_bucket_stock_drift_units, flashsale_bucket_empty_buckets,
// flashsale_bucket_starved_buckets and flashsale_bucket_wanted) and no stored
// state: it reads the watched item ids from MySQL's items table and everything
// else through pkg/audit, pkg/store, pkg/stock and pkg/bucketview (the
// buckets' want flags and transfer marks).
//
// Only the reaper's main imports it: the audit runs in the reaper. It never
// imports the HTTP layer, nor the reaper's other workers (reap, rebalance,
// the waiting room's gate), whose effects it watches through the stores like
// any other writer's.
package auditor
