// Package catalog is the admin side of items: create or update an item in
// MySQL and (re)build its Redis state from MySQL, safely.
//
// Safety of a rebuild rests on three things: the item's MySQL row is locked
// (GetItemForUpdate) while its snapshot is read and written to Redis, so no
// consumer stock change or reaper restore commits in between; Redis itself
// refuses while reservations are pending (warm.lua); and the orders topic's
// consumer group must have no lag, so no admitted request is still on its way
// to MySQL when Redis is overwritten (this also covers Redis having lost the
// item together with its reservations).
//
// It also ends a sale now (End), explains a rebuild refused while transfers
// between buckets are open (transfers.go), and holds the rules of an item as
// an admin writes it (Input, input.go: each field's bounds, the sale window,
// the queue's opening and pace, a PATCH merged onto the stored item, a PUT
// that keeps the stored queue), which PutInput and PatchInput check under the
// item's row lock. It owns no state of its own: the
// rows are pkg/store's (the queue's item_queues row pkg/waitroom's, saved
// in the item's transaction by waitroom.SaveQueue), the Redis state and
// warm.lua pkg/stock's, and the
// consumer group's lag comes from the caller as a LagFunc, so the package
// needs no Kafka client.
//
// Only pkg/httpapi imports it, for the admin routes that create, update, warm
// and end items. It imports pkg/store, pkg/stock and pkg/waitroom (for the
// queue's row alone), and never the HTTP layer,
// pkg/orderlog, or the workers (admission, orderwriter, reap, rebalance): it
// makes its changes safe by the locks and checks above, not by knowing their
// code.
package catalog
