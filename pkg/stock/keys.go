// Package stock owns flashsale's Redis state: the per-item stock counter,
// sale metadata, buyer set, pending reservations, idempotency answers, restore
// guards and the status cache, and the Lua scripts (one file per operation,
// under lua/) that change them atomically.
//
// Every key of one item carries the hash tag {item:<id>}, so all keys one
// script touches live in the same Redis Cluster slot.
package stock

import "fmt"

// Keys names the Redis keys of one item.
type Keys struct {
	ItemID int64
	Stock  string // string: units Redis may still admit
	Meta   string // hash: start_ms, end_ms, limit
	// Holders is a hash: user id -> the request id by which the user holds
	// (or held) this item. It is the buyer mark (one order per buyer), and it
	// lets a buyer who lost an answer find the request they hold.
	Holders      string
	HolderBits   string // bitmap: a bit per hash of a holder's user id (holderbits.go)
	Reservations string // hash: request id -> "user:qty:reserved_ms"
}

// KeysOf returns the keys of item id.
func KeysOf(id int64) Keys {
	p := prefix(id)
	return Keys{
		ItemID:       id,
		Stock:        p + "stock",
		Meta:         p + "meta",
		Holders:      p + "holders",
		HolderBits:   p + "hbits",
		Reservations: p + "resv",
	}
}

func prefix(id int64) string { return fmt.Sprintf("fs:{item:%d}:", id) }

// WarmedItems is a set of every item id ever warmed. It is the one key
// without an item's hash tag (on a Cluster it lives on one shard): the
// reaper reads it to find reservations of items MySQL does not know, where a
// SCAN of the whole keyspace cost Redis about 1.6 ms per 1,000 keys, each
// call blocking admissions, on a keyspace of millions of status keys and
// restore guards.
const WarmedItems = "fs:items"

// Idempotency is the key of one user's Idempotency-Key for this item.
func (k Keys) Idempotency(userID int64, key string) string {
	return fmt.Sprintf("%sidem:%d:%s", prefix(k.ItemID), userID, key)
}

// UserRate is the per-user admission window of this item.
func (k Keys) UserRate(userID int64) string {
	return fmt.Sprintf("%srl:%d", prefix(k.ItemID), userID)
}

// RestoreGuard marks that the qty of the cancelled order of requestID came
// back to Redis. It is named by request id, never by the AUTO_INCREMENT order
// id: a MySQL restored or reset without Redis hands old order ids out again,
// and an old guard must not swallow a new order's restore.
func (k Keys) RestoreGuard(requestID string) string {
	return prefix(k.ItemID) + "restored:" + requestID
}

// Status is the cached buyer-visible status of one request.
func (k Keys) Status(requestID string) string {
	return prefix(k.ItemID) + "st:" + requestID
}

// StatusChannel is the item's shard channel (SPUBLISH/SSUBSCRIBE) on which
// status_put.lua announces the request id of every status it stores. It
// carries the item's hash tag, so it lives on the shard of the item's keys.
func (k Keys) StatusChannel() string {
	return prefix(k.ItemID) + "stn"
}
