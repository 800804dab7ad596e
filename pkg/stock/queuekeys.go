package stock

// QueueKeys names the Redis keys of an item's waiting room. They carry the
// item's bucket 0 hash tag, next to its meta, so one script sees both.
type QueueKeys struct {
	ByUser   string // hash: user id -> "ticket:arrival:taken_ms"
	ByTicket string // hash: ticket id -> "user:arrival:taken_ms"
	Arrivals string // string: the number of tickets taken
	Meta     string // the item's meta (bucket 0)
	Gate     string // hash: serving (positions admitted), last_ms (pkg/waitroom)
	// Waitlist is a hash: the released units held for the waitlist (pool),
	// the serving position of the last ticket considered for one (cursor),
	// and counts of units (in, offered, claimed, lapsed, returned); Offers
	// a hash of the live offers, user id -> "ticket:position:expires_ms"
	// (waitlist.go). Claims is a hash of the reservations that claimed an
	// offer, request id -> the offer, so a claim released (its order not
	// taken) goes back to its offer or the pool, not to the stock.
	// These three are bucket 0's share of the waitlist: a bucketed item's
	// other buckets have their own (Keys.Waitlist, Offers, Claims), and
	// bucket 0's waitlist hash then also keeps the gate's place in the
	// whole line (field line; pkg/waitroom gate_offers_buckets.go).
	Waitlist string
	Offers   string
	Claims   string
}

// QueueKeysOf returns item id's waiting room keys.
func QueueKeysOf(id int64) QueueKeys {
	p, k := bucketPrefix(id, 0), BucketKeys(id, 0)
	return QueueKeys{ByUser: p + "qu", ByTicket: p + "qt", Arrivals: p + "qn", Meta: k.Meta, Gate: p + "qg",
		Waitlist: k.Waitlist, Offers: k.Offers, Claims: k.Claims}
}
