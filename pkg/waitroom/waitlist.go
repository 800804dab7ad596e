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

// The waitlist (issue 25): units of a queued item that the reaper releases
// (cancelled unpaid orders) while its sale is open and sold out are held in
// a pool (restore.lua) and offered by the gate, one unit per buyer, to the
// tickets in serving order whose buyers hold nothing (waitlist_offer.lua).
// An offer is good for a claim window; its buyer's order claims it
// (admit.lua with AdmitRequest.Claim), else it lapses back to the pool and
// passes on. With nobody left in line, or once the sale is over, the pool
// goes back to the stock. Every step is one script in one slot, so a unit
// is in exactly one place at any moment: the pool, one offer, a
// reservation, or the stock (I9, pkg/audit).
//
// A bucketed item's waitlist is one share per bucket, in the bucket's slot
// (stock.Keys.Waitlist, Offers, Claims): a unit released in a bucket waits
// in that bucket's pool, an offer lives in its buyer's home bucket (where
// admit.lua claims it, beside the buyer mark), and a unit offered to a
// buyer of another bucket first moves between the two pools by a waitlist
// transfer (pkg/rebalance, driven for the gate through PoolMover). Each
// share counts what moved in and out (moved_in, moved_out), so each bucket
// balances on its own at every moment, and the item's sum differs only by
// the units in flight between two buckets (Waitlist.Moving).

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

// OfferReleased runs one pass of item itemID's waitlist (an unbucketed
// item's: its one share, bucket 0's): OfferReleasedIn.
func (s *Store) OfferReleased(ctx context.Context, itemID int64, window time.Duration, cands []Candidate, endOfLine bool) (OfferPass, error) {
	return s.OfferReleasedIn(ctx, itemID, 0, window, cands, endOfLine)
}

// OfferReleasedIn runs one pass of bucket's share of item itemID's
// waitlist: lapsed offers back to the bucket's pool, the pool offered to
// cands (tickets after the bucket's cursor, in serving order, whose buyers'
// home is bucket) for window each, and the pool back to the bucket's stock
// when endOfLine says cands reach the end of the line and none is left to
// offer to, or when the sale is over. ErrNotWarmed: the bucket has no meta.
func (s *Store) OfferReleasedIn(ctx context.Context, itemID int64, bucket int, window time.Duration, cands []Candidate, endOfLine bool) (OfferPass, error) {
	k := stock.BucketKeys(itemID, bucket)
	args := make([]any, 0, 2+3*len(cands))
	args = append(args, window.Milliseconds(), flag(endOfLine))
	for _, c := range cands {
		args = append(args, c.Position, c.Ticket, c.UserID)
	}
	var p OfferPass
	err := s.evalInts(ctx, fmt.Sprintf("waitroom: waitlist offers of item %d bucket %d", itemID, bucket),
		waitlistOfferScript, []string{k.Waitlist, k.Offers, k.Holders, k.Meta, k.Stock}, args,
		&p.Pool, &p.Offers, &p.Cursor, &p.Offered, &p.Lapsed, &p.Returned)
	if err != nil {
		return OfferPass{}, err
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

// OfferOf reads user's offer of item itemID, in the user's home bucket;
// found false when there is none. An offer past its expiry that the gate
// has not lapsed yet is returned as it is: the caller compares Expires
// (admit.lua refuses its claim).
func (s *Store) OfferOf(ctx context.Context, itemID, userID int64) (Offer, bool, error) {
	u := strconv.FormatInt(userID, 10)
	var buckets *redis.StringCmd
	var v0 *redis.StringCmd
	k := stock.KeysOf(itemID)
	// Bucket 0's keys, one slot: one round trip for an unbucketed item.
	_, err := s.client().Pipelined(ctx, func(p redis.Pipeliner) error {
		buckets = p.HGet(ctx, k.Meta, "buckets")
		v0 = p.HGet(ctx, k.Offers, u)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Offer{}, false, unavailable("waitroom: read offer", err)
	}
	v, err := v0.Result()
	if h := stock.HomeBucket(userID, stock.ParseBuckets(nilIfMissing(buckets))); h != 0 {
		v, err = s.client().HGet(ctx, stock.BucketKeys(itemID, h).Offers, u).Result()
	}
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

// nilIfMissing is c's value as HMGET would answer it (nil for a missing
// field), for stock.ParseBuckets.
func nilIfMissing(c *redis.StringCmd) any {
	if v, err := c.Result(); err == nil {
		return v
	}
	return nil
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
// Returned to the stock, or (a bucketed item) Moving between two buckets'
// shares.
type Waitlist struct {
	Pool, Offers, Cursor, Version          int64
	In, Offered, Claimed, Lapsed, Returned int64
	// MovedIn and MovedOut count the units waitlist transfers moved into
	// and out of the share (a bucketed item's; pkg/rebalance), since the
	// last warm folded them into In.
	MovedIn, MovedOut int64
	// PerBucket is a bucketed item's shares, bucket by bucket (nil for an
	// unbucketed item): the fields above are their sums, except Cursor,
	// which is the gate's place in the whole line (bucket 0's line), where
	// a share's Cursor is the last ticket of its bucket's buyers
	// considered.
	PerBucket []Waitlist
}

// Held is the units the waitlist (or a bucket's share) holds out of the
// stock: the pool and the live offers (one unit each). Of an item's sum,
// the units Moving between two shares are held too.
func (w Waitlist) Held() int64 { return w.Pool + w.Offers }

// Moving is, of an item's sum, the units a waitlist transfer took out of
// one bucket's share and has not given to another's yet (0 at rest, and
// for an unbucketed item); of one share, what moved out less what moved in.
func (w Waitlist) Moving() int64 { return w.MovedOut - w.MovedIn }

// Balanced reports I9 for w: what came in (released, or moved in) is in
// the pool, on offer, claimed, returned or moved out. A share read in one
// step always balances; so does their sum.
func (w Waitlist) Balanced() bool {
	return w.Pool >= 0 && w.Offers >= 0 && w.In+w.MovedIn == w.Pool+w.Offers+w.Claimed+w.Returned+w.MovedOut
}

// Report is w as the audit, the admin queue view and flashsalectl show it.
func (w Waitlist) Report() api.Waitlist {
	return api.Waitlist{In: w.In, Pool: w.Pool, Offers: w.Offers, Offered: w.Offered, Claimed: w.Claimed,
		Lapsed: w.Lapsed, Returned: w.Returned, Cursor: w.Cursor, Moved: w.MovedIn, Moving: w.Moving()}
}

// waitlistFields are the fields of a share's hash ReadWaitlist reads, in
// the order of Waitlist's fields it fills (readShare).
var waitlistFields = []string{"pool", "cursor", "ver", "in", "offered", "claimed", "lapsed", "returned", "moved_in", "moved_out", "line"}

// readShares reads buckets' shares of item itemID's waitlist, one
// waitlist_read.lua call each (a share's keys share a slot, so each is one
// step), pipelined: on a Cluster one round trip per node. It also returns
// bucket 0's line when bucket 0 is among them.
func (s *Store) readShares(ctx context.Context, itemID int64, buckets []int) ([]Waitlist, int64, error) {
	cmds := make([]*redis.Cmd, len(buckets))
	_, err := s.client().Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range buckets {
			cmds[i] = readShare(ctx, p, itemID, b)
		}
		return nil
	})
	if err != nil {
		return nil, 0, unavailable("waitroom: read waitlist", err)
	}
	out := make([]Waitlist, len(buckets))
	var line int64
	for i, c := range cmds {
		w, l, err := parseShare(c, itemID, buckets[i])
		if err != nil {
			return nil, 0, err
		}
		out[i] = w
		if buckets[i] == 0 {
			line = l
		}
	}
	return out, line, nil
}

// readShare queues the read of bucket's share on p. EVAL, not EVALSHA: a
// pipelined EVALSHA's NOSCRIPT is only seen after the pipeline ran, and
// the script is a few lines.
func readShare(ctx context.Context, p redis.Pipeliner, itemID int64, bucket int) *redis.Cmd {
	k := stock.BucketKeys(itemID, bucket)
	args := make([]any, len(waitlistFields))
	for i, f := range waitlistFields {
		args[i] = f
	}
	return waitlistReadScript.Eval(ctx, p, []string{k.Waitlist, k.Offers}, args...)
}

// parseShare parses waitlist_read.lua's answer into a share, and returns
// its line (bucket 0's field).
func parseShare(c *redis.Cmd, itemID int64, bucket int) (Waitlist, int64, error) {
	vals, err := c.Slice()
	if err != nil || len(vals) != len(waitlistFields)+1 {
		return Waitlist{}, 0, fmt.Errorf("waitroom: waitlist of item %d bucket %d: %v %w", itemID, bucket, vals, err)
	}
	var w Waitlist
	var line int64
	dst := []*int64{&w.Pool, &w.Cursor, &w.Version, &w.In, &w.Offered, &w.Claimed, &w.Lapsed, &w.Returned, &w.MovedIn, &w.MovedOut, &line}
	for i, v := range vals[:len(waitlistFields)] {
		if v == nil {
			continue
		}
		x, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		if err != nil {
			return Waitlist{}, 0, fmt.Errorf("waitroom: waitlist of item %d bucket %d: field %s: %w", itemID, bucket, waitlistFields[i], err)
		}
		*dst[i] = x
	}
	n, ok := vals[len(waitlistFields)].(int64)
	if !ok {
		return Waitlist{}, 0, fmt.Errorf("waitroom: waitlist of item %d bucket %d: offers %v", itemID, bucket, vals[len(waitlistFields)])
	}
	w.Offers = n
	return w, line, nil
}

// ReadWaitlist reads item itemID's waitlist (all zero for an item that
// never had one). An unbucketed item's is one share, read in one step with
// the item's bucket count (one round trip). A bucketed item's is every
// bucket's share, each read in one step, summed: each share is exact, the
// sum is of shares read a moment apart (a transfer between two of them may
// be seen in both or in neither, which Moving shows).
func (s *Store) ReadWaitlist(ctx context.Context, itemID int64) (Waitlist, error) {
	var first *redis.Cmd
	var buckets *redis.StringCmd
	_, err := s.client().Pipelined(ctx, func(p redis.Pipeliner) error {
		first = readShare(ctx, p, itemID, 0)
		buckets = p.HGet(ctx, stock.KeysOf(itemID).Meta, "buckets")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Waitlist{}, unavailable("waitroom: read waitlist", err)
	}
	w, line, err := parseShare(first, itemID, 0)
	if err != nil {
		return Waitlist{}, err
	}
	n := stock.ParseBuckets(nilIfMissing(buckets))
	if n <= 1 {
		return w, nil
	}
	rest := make([]int, 0, n-1)
	for b := 1; b < n; b++ {
		rest = append(rest, b)
	}
	others, _, err := s.readShares(ctx, itemID, rest)
	if err != nil {
		return Waitlist{}, err
	}
	return sumShares(append([]Waitlist{w}, others...), line), nil
}

// ReadShares reads item itemID's n buckets' shares of its waitlist
// (readShares), summed as ReadWaitlist sums them: for the gate and the
// audit, which know the bucket count.
func (s *Store) ReadShares(ctx context.Context, itemID int64, n int) (Waitlist, error) {
	all := make([]int, max(n, 1))
	for b := range all {
		all[b] = b
	}
	shares, line, err := s.readShares(ctx, itemID, all)
	if err != nil {
		return Waitlist{}, err
	}
	if n <= 1 {
		return shares[0], nil
	}
	return sumShares(shares, line), nil
}

// QueueShare queues on p the read of bucket's share of item itemID's
// waitlist, for a caller that reads other keys of the bucket in the same
// step (pkg/audit's cut: p is a transaction pipeline of the bucket's slot).
// The returned function parses it once p ran, with bucket 0's line.
func QueueShare(ctx context.Context, p redis.Pipeliner, itemID int64, bucket int) func() (Waitlist, int64, error) {
	c := readShare(ctx, p, itemID, bucket)
	return func() (Waitlist, int64, error) { return parseShare(c, itemID, bucket) }
}

// SumShares is an item's waitlist from its buckets' shares (one share: that
// share); line is the gate's place in the whole line, bucket 0's.
func SumShares(shares []Waitlist, line int64) Waitlist {
	if len(shares) == 1 {
		return shares[0]
	}
	return sumShares(shares, line)
}

// sumShares is a bucketed item's waitlist from its shares; line is the
// gate's place in the whole line.
func sumShares(shares []Waitlist, line int64) Waitlist {
	sum := Waitlist{Cursor: line, PerBucket: shares}
	for _, w := range shares {
		sum.Pool += w.Pool
		sum.Offers += w.Offers
		sum.Version += w.Version
		sum.In += w.In
		sum.Offered += w.Offered
		sum.Claimed += w.Claimed
		sum.Lapsed += w.Lapsed
		sum.Returned += w.Returned
		sum.MovedIn += w.MovedIn
		sum.MovedOut += w.MovedOut
	}
	return sum
}

// Offers reads every live offer of item itemID, by user id: one HGETALL
// per bucket of hashes no larger than the units the waitlist holds.
func (s *Store) Offers(ctx context.Context, itemID int64) (map[int64]Offer, error) {
	n, _, err := s.st.Buckets(ctx, itemID)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.MapStringStringCmd, max(n, 1))
	_, err = s.client().Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range cmds {
			cmds[b] = p.HGetAll(ctx, stock.BucketKeys(itemID, b).Offers)
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("waitroom: read offers", err)
	}
	out := map[int64]Offer{}
	for _, c := range cmds {
		for u, v := range c.Val() {
			user, err1 := strconv.ParseInt(u, 10, 64)
			o, err2 := parseOffer(v)
			if err := errors.Join(err1, err2); err != nil {
				return nil, fmt.Errorf("waitroom: offers of item %d: %w", itemID, err)
			}
			out[user] = o
		}
	}
	return out, nil
}
