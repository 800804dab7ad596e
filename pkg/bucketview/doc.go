// Package bucketview reads a bucketed item's buckets as the ones outside the
// rebalancer see them. A bucketed item splits its stock over buckets, each
// in its own Redis Cluster slot (pkg/stock), and the rebalancer
// (pkg/rebalance) moves units between them, taking a transfer's units out
// of the donor before it gives them to the recipient; a plain read of the
// buckets can then see them in neither. This package makes the reads that
// tell a unit in flight from one sold:
//
//   - Snapshot: every bucket's stock, bracketed by the item's transfer
//     marks, and Consistent only when no transfer was live or finished
//     while the buckets were read; the ingress judges "sold out" by it
//     (Snapshot.SoldOut, in pkg/admission's bucket promise).
//   - ReadTransferMark: the marks alone (TransfersLive, TransfersDone), read
//     before and after the audit's per-bucket checks and exported by the
//     auditor as flashsale_stock_transfers_done.
//   - Wants: the buckets' want flags, the rebalancer's demand signal, for
//     the auditor's gauges.
//
// It owns no key and writes nothing: the keys are named by pkg/stock
// (Keys.TransfersLive, TransfersDone, Want, and the stock per bucket it
// reads through stock.Store.BucketStocks), the marks are written by
// pkg/rebalance's steps, the want flags by pkg/stock's admission scripts.
//
// Importers: pkg/admission (the snapshot), pkg/audit and pkg/auditor (the
// marks and the flags), and pkg/rebalance's tests. It imports only
// pkg/stock. It must never import pkg/rebalance, whose loop and lease the
// ingress must not link (the ingress sees transfers only through these
// marks), nor the HTTP layer or a package that imports it.
package bucketview
