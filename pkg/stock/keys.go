package stock

import (
	"fmt"

	"github.com/flashsale-dev/flashsale/pkg/reqid"
)

// Keys names the Redis keys of one stock bucket of an item (bucket 0 is the
// whole of an unbucketed item).
type Keys struct {
	ItemID int64
	Bucket int
	Stock  string // string: units Redis may still admit
	// Meta is a hash: start_ms, end_ms, limit, buckets and queue ("1" when
	// the item has a waiting room), written by warm.lua. admit.lua reads
	// queue to require an admission grant, and restore.lua and release.lua
	// read it (with the window and buckets) to decide whether a unit given
	// back goes to the waitlist or to the stock.
	Meta string
	// Holders is a hash: user id -> the request id by which the user holds
	// (or held) this item. It is the buyer mark (one order per buyer), and it
	// lets a buyer who lost an answer find the request they hold.
	Holders      string
	HolderBits   string // bitmap: a bit per hash of a holder's user id (holderbits.go)
	Reservations string // hash: request id -> "user:qty:reserved_ms"
	// Want is set (with a short TTL) by admit.lua when a buyer found this
	// bucket short while the item has other buckets: the rebalancer's
	// demand signal.
	Want string
	// Waitlist, Offers and Claims are the bucket's share of the item's
	// waitlist (QueueKeys describes the three): a unit released in this
	// bucket waits in its pool, an offer to a buyer whose home this bucket
	// is lives in its offers, and that buyer's claim in its claims, so
	// each step is one script in the bucket's slot. Bucket 0's are the
	// item's QueueKeys' (an unbucketed item has no other); a bucketed
	// item's units move between the buckets' pools by pkg/rebalance's
	// waitlist transfers.
	Waitlist, Offers, Claims string
	prefix                   string
}

// KeysOf returns the keys of item id's bucket 0: all of an unbucketed item.
func KeysOf(id int64) Keys { return BucketKeys(id, 0) }

// BucketKeys returns the keys of bucket of item id.
func BucketKeys(id int64, bucket int) Keys {
	p := bucketPrefix(id, bucket)
	return Keys{
		ItemID:       id,
		Bucket:       bucket,
		prefix:       p,
		Want:         p + "want",
		Stock:        p + "stock",
		Meta:         p + "meta",
		Holders:      p + "holders",
		HolderBits:   p + "hbits",
		Reservations: p + "resv",
		Waitlist:     p + "qw",
		Offers:       p + "qo",
		Claims:       p + "qc",
	}
}

// RequestKeys returns the keys of the bucket requestID was admitted in.
func RequestKeys(id int64, requestID string) Keys { return BucketKeys(id, reqid.Bucket(requestID)) }

// TallyKey names item id's answer tally (pkg/tally): a hash the ingress
// replicas add their order-answer counts to. It carries bucket 0's tag, so
// it lives in the item's slot and a replica's flush of one item is one
// node's work on a Cluster.
func TallyKey(id int64) string { return bucketPrefix(id, 0) + "tally" }

func bucketPrefix(id int64, bucket int) string {
	if bucket == 0 {
		return fmt.Sprintf("%s{item:%d}:", root, id)
	}
	return fmt.Sprintf("%s{item:%d:b%d}:", root, id, bucket)
}

// WarmedItems names the set of every item id ever warmed. It is the one key
// without an item's hash tag (on a Cluster it lives on one shard): the
// reaper reads it to find reservations of items MySQL does not know, where a
// SCAN of the whole keyspace cost Redis about 1.6 ms per 1,000 keys, each
// call blocking admissions, on a keyspace of millions of status keys and
// restore guards.
func WarmedItems() string { return root + "items" }

// Idempotency is the key of one user's Idempotency-Key for this item.
func (k Keys) Idempotency(userID int64, key string) string {
	return fmt.Sprintf("%sidem:%d:%s", k.prefix, userID, key)
}

// UserRate is the per-user admission window of this item.
func (k Keys) UserRate(userID int64) string {
	return fmt.Sprintf("%srl:%d", k.prefix, userID)
}

// RestoreGuard marks that the qty of the cancelled order of requestID came
// back to Redis. It is named by request id, never by the AUTO_INCREMENT order
// id: a MySQL restored or reset without Redis hands old order ids out again,
// and an old guard must not swallow a new order's restore.
func (k Keys) RestoreGuard(requestID string) string {
	return k.prefix + "restored:" + requestID
}

// Status is the cached buyer-visible status of one request. pkg/orderstatus
// owns the cache and its scripts; the name is here with every other key of
// a bucket, so all of them carry the bucket's hash tag by one rule.
func (k Keys) Status(requestID string) string {
	return k.prefix + "st:" + requestID
}

// StatusChannel is the item's shard channel (SPUBLISH/SSUBSCRIBE) on which
// pkg/orderstatus's status_put.lua announces every status it stores (the
// request id and the value stored). It carries the bucket's hash tag, so it lives on the shard of
// the bucket's keys.
func (k Keys) StatusChannel() string {
	return k.prefix + "stn"
}

// StockChangeGuard is the key that keeps what operation id changed in this
// bucket (pkg/stockchange, lua/stock_change.lua). Operation ids are the
// caller's, checked by the admin API to be short and of a safe alphabet.
// pkg/stockchange owns the changes and their script; the name is here with
// every other key of a bucket, so all of them carry the bucket's hash tag
// by one rule.
func (k Keys) StockChangeGuard(operationID string) string {
	return k.prefix + "chg:" + operationID
}

// TransferGuard records that transfer id's step dir ("out" of the donor,
// "cut" of it, "in" to the recipient) ran in this bucket, and how it ended,
// so a repeated step is a no-op. pkg/rebalance owns the transfers and their
// scripts; the name is here with every other key of a bucket, so all of
// them carry the bucket's hash tag by one rule.
func (k Keys) TransferGuard(id int64, dir string) string {
	return fmt.Sprintf("%sx%s:%d", k.prefix, dir, id)
}

// TransfersLive is a set of the ids of the item's transfers between buckets
// that are under way, and TransfersDone counts the ones finished. Both are
// bucket 0's. With the stock keys they make a consistent "is every bucket
// empty" read: a unit in flight is in neither bucket, so "sold out" may only
// be answered when no transfer was live or finished while the buckets were
// read (pkg/bucketview's Snapshot, which the ingress judges "sold out" by).
// The rebalancer (pkg/rebalance) writes both; the ingress and the audit read
// them through pkg/bucketview.
func (k Keys) TransfersLive() string { return bucketPrefix(k.ItemID, 0) + "xlive" }

// TransfersDone: see TransfersLive.
func (k Keys) TransfersDone() string { return bucketPrefix(k.ItemID, 0) + "xdone" }

// RebalanceWake names the pub/sub channel on which an ingress names an item
// (its id, in decimal) when a buyer starts waiting for a bucket's stock, so
// the rebalancer passes at once instead of at its next interval
// (pkg/admission and pkg/rebalance, wake.go). A lost message costs only
// that latency.
func RebalanceWake() string { return root + "rebalance:wake" }
