package api

import "time"

// AuditReport is one item's audit (schema Audit; pkg/audit computes it).
// Quantities are units (sums of qty); Pending and Rejected count requests.
type AuditReport struct {
	ItemID     int64 `json:"item_id"`
	Total      int64 `json:"total"`
	RedisStock int64 `json:"redis_stock"`
	DBStock    int64 `json:"db_stock"`
	// Pending is the number of Redis reservations waiting for an outcome;
	// PendingQty their units.
	Pending    int64 `json:"pending"`
	PendingQty int64 `json:"pending_qty"`
	// OldestReservedAt is when the oldest pending reservation was made, by
	// Redis' clock; absent with none. The orphan sweep voids a reservation
	// older than FLASHSALE_ORPHAN_GRACE.
	OldestReservedAt time.Time `json:"oldest_reserved_at,omitzero"`
	Unpaid           int64     `json:"unpaid"`
	Paid             int64     `json:"paid"`
	Cancelled        int64     `json:"cancelled"`
	// Rejected counts requests decided REJECTED, ABORTED or VOIDED.
	Rejected int64 `json:"rejected"`
	// Buckets is the item's bucket count (items.buckets; 1: unbucketed).
	Buckets int `json:"buckets"`
	// PerBucket has one entry per bucket of a bucketed item, in bucket
	// order, checked on its own (pkg/audit buckets.go). An unbucketed item has none:
	// its one bucket is the item (items.stock, the {item:<id>} keys), so an
	// entry would repeat the item's numbers and be a second copy for
	// clients to keep in step; per_bucket is there exactly when buckets > 1.
	PerBucket []AuditBucket `json:"per_bucket,omitempty"`
	// Waitlist is the hand-off of released units of an item with a
	// waiting room (I9); absent for an item without one.
	Waitlist   *Waitlist `json:"waitlist,omitempty"`
	OK         bool      `json:"ok"`
	Violations []string  `json:"violations"`
	// Info notes checks that were not made, and why (a transfer between
	// buckets under way); not violations.
	Info []string `json:"info,omitempty"`
}

// AuditBucket is one bucket's numbers (schema AuditBucket), as AuditReport's
// are the item's: Total and DBStock are its item_buckets row, RedisStock,
// Pending and PendingQty its Redis bucket, Unpaid, Paid and Cancelled the qty
// of the orders attributed to it, WaitlistHeld its share of the waitlist.
type AuditBucket struct {
	Bucket     int   `json:"bucket"`
	Total      int64 `json:"total"`
	DBStock    int64 `json:"db_stock"`
	RedisStock int64 `json:"redis_stock"`
	Pending    int64 `json:"pending"`
	PendingQty int64 `json:"pending_qty"`
	Unpaid     int64 `json:"unpaid"`
	Paid       int64 `json:"paid"`
	Cancelled  int64 `json:"cancelled"`
	// WaitlistHeld is what the bucket's share of the item's waitlist holds
	// out of its stock (pool and live offers); 0 for an item without a
	// waiting room.
	WaitlistHeld int64 `json:"waitlist_held"`
}

// Waitlist is what an item's waitlist holds and did, in units (schema
// Waitlist; pkg/waitroom waitlist.go): I9 says every unit that came In is in
// the pool, on one live offer, claimed by an order, returned to the stock,
// or (a bucketed item) Moving from one bucket's share to another's. Cursor
// is the serving position of the last ticket considered for an offer (a
// bucketed item: up to which every ticket was). Moved counts the units moved
// between buckets' shares for an offer to a buyer of another bucket, since
// the last warm. The admin queue view and flashsalectl show the same.
type Waitlist struct {
	In       int64 `json:"in"`
	Pool     int64 `json:"pool"`
	Offers   int64 `json:"offers"`
	Offered  int64 `json:"offered"`
	Claimed  int64 `json:"claimed"`
	Lapsed   int64 `json:"lapsed"`
	Returned int64 `json:"returned"`
	Cursor   int64 `json:"cursor"`
	Moved    int64 `json:"moved"`
	Moving   int64 `json:"moving"`
}
