package waitroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// The waitlist (issue 25): units of an unbucketed queued item that the
// reaper releases (cancelled unpaid orders) while its sale is open and sold
// out are held in a pool (restore.lua) and offered by the gate, one unit per
// buyer, to the tickets in serving order whose buyers hold nothing
// (waitlist_offer.lua). An offer is good for a claim window; its buyer's
// order claims it (admit.lua with AdmitRequest.Claim), else it lapses back
// to the pool and passes on. With nobody left in line, or once the sale is
// over, the pool goes back to the stock. Every step is one script in the
// item's slot, so a unit is in exactly one place at any moment: the pool,
// one offer, a reservation, or the stock (I9, pkg/audit).

// Candidate is a ticket the gate may offer a released unit to.
type Candidate struct {
	Position int64 // in the serving order, 1 first
	Ticket   string
	UserID   int64
}

// OfferPass is what one OfferReleased call did and left.
type OfferPass struct {
	Pool, Offers, Cursor      int64 // after the call
	Offered, Lapsed, Returned int64 // units, by this call
}

// OfferReleased runs one pass of item itemID's waitlist: lapsed offers back
// to the pool, the pool offered to cands (the tickets after the cursor, in
// serving order) for window each, and the pool back to the stock when
// endOfLine says cands reach the end of the line and none is left to offer
// to, or when the sale is over. ErrNotWarmed: the item has no meta.
func (s *Store) OfferReleased(ctx context.Context, itemID int64, window time.Duration, cands []Candidate, endOfLine bool) (OfferPass, error) {
	q := stock.QueueKeysOf(itemID)
	k := stock.KeysOf(itemID)
	args := make([]any, 0, 2+3*len(cands))
	args = append(args, window.Milliseconds(), flag(endOfLine))
	for _, c := range cands {
		args = append(args, c.Position, c.Ticket, c.UserID)
	}
	res, err := s.eval(ctx, waitlistOfferScript, []string{q.Waitlist, q.Offers, k.Holders, k.Meta, k.Stock}, args...).StringSlice()
	if err != nil {
		return OfferPass{}, unavailable("waitroom: waitlist offers", err)
	}
	if len(res) == 1 && res[0] == "unknown" {
		return OfferPass{}, ErrNotWarmed
	}
	var p OfferPass
	if err := parseInts(res, &p.Pool, &p.Offers, &p.Cursor, &p.Offered, &p.Lapsed, &p.Returned); err != nil {
		return OfferPass{}, fmt.Errorf("waitroom: waitlist offers of item %d: %w", itemID, err)
	}
	return p, nil
}

// Offer is one buyer's live waitlist offer: one unit held for them until
// Expires.
type Offer struct {
	Ticket   string
	Position int64
	Expires  time.Time
}

// OfferOf reads user's offer of item itemID; found false when there is
// none. An offer past its expiry that the gate has not lapsed yet is
// returned as it is: the caller compares Expires (admit.lua refuses its
// claim).
func (s *Store) OfferOf(ctx context.Context, itemID, userID int64) (Offer, bool, error) {
	v, err := s.client().HGet(ctx, stock.QueueKeysOf(itemID).Offers, strconv.FormatInt(userID, 10)).Result()
	if errors.Is(err, redis.Nil) {
		return Offer{}, false, nil
	}
	if err != nil {
		return Offer{}, false, unavailable("waitroom: read offer", err)
	}
	o, err := parseOffer(v)
	if err != nil {
		return Offer{}, false, fmt.Errorf("waitroom: offer of user %d, item %d: %w", userID, itemID, err)
	}
	return o, true, nil
}

// parseOffer reads "ticket:position:expires_ms".
func parseOffer(v string) (Offer, error) {
	parts := strings.Split(v, ":")
	if len(parts) != 3 {
		return Offer{}, fmt.Errorf("malformed offer %q", v)
	}
	pos, err1 := strconv.ParseInt(parts[1], 10, 64)
	ms, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Offer{}, fmt.Errorf("malformed offer %q: %w", v, err)
	}
	return Offer{Ticket: parts[0], Position: pos, Expires: time.UnixMilli(ms)}, nil
}

// Waitlist is an item's waitlist as the audit checks it (I9): every unit
// that came In is in the Pool, on one of the Offers, Claimed by an order,
// or Returned to the stock.
type Waitlist struct {
	Pool, Offers, Cursor, Version          int64
	In, Offered, Claimed, Lapsed, Returned int64
}

// Held is the units the waitlist holds out of the stock: the pool and the
// live offers (one unit each).
func (w Waitlist) Held() int64 { return w.Pool + w.Offers }

// Report is w as the audit, the admin queue view and flashsalectl show it.
func (w Waitlist) Report() api.Waitlist {
	return api.Waitlist{In: w.In, Pool: w.Pool, Offers: w.Offers, Offered: w.Offered, Claimed: w.Claimed,
		Lapsed: w.Lapsed, Returned: w.Returned, Cursor: w.Cursor}
}

// ReadWaitlist reads item itemID's waitlist (all zero for an item that
// never had one) as one snapshot: both keys share a slot, so one MULTI.
func (s *Store) ReadWaitlist(ctx context.Context, itemID int64) (Waitlist, error) {
	q := stock.QueueKeysOf(itemID)
	var h *redis.SliceCmd
	var n *redis.IntCmd
	_, err := s.client().TxPipelined(ctx, func(p redis.Pipeliner) error {
		h = p.HMGet(ctx, q.Waitlist, "pool", "cursor", "ver", "in", "offered", "claimed", "lapsed", "returned")
		n = p.HLen(ctx, q.Offers)
		return nil
	})
	if err != nil {
		return Waitlist{}, unavailable("waitroom: read waitlist", err)
	}
	var w Waitlist
	dst := []*int64{&w.Pool, &w.Cursor, &w.Version, &w.In, &w.Offered, &w.Claimed, &w.Lapsed, &w.Returned}
	for i, v := range h.Val() {
		if v == nil {
			continue
		}
		x, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		if err != nil {
			return Waitlist{}, fmt.Errorf("waitroom: waitlist of item %d: field %d: %w", itemID, i, err)
		}
		*dst[i] = x
	}
	w.Offers = n.Val()
	return w, nil
}

// Offers reads every live offer of item itemID, by user id: one HGETALL of
// a hash no larger than the units the waitlist holds.
func (s *Store) Offers(ctx context.Context, itemID int64) (map[int64]Offer, error) {
	m, err := s.client().HGetAll(ctx, stock.QueueKeysOf(itemID).Offers).Result()
	if err != nil {
		return nil, unavailable("waitroom: read offers", err)
	}
	out := make(map[int64]Offer, len(m))
	for u, v := range m {
		user, err1 := strconv.ParseInt(u, 10, 64)
		o, err2 := parseOffer(v)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("waitroom: offers of item %d: %w", itemID, err)
		}
		out[user] = o
	}
	return out, nil
}
