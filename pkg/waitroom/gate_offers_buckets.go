package waitroom

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// A bucketed item's waitlist (issue 41): its units, like its stock, live in
// its buckets, each in its own slot, so no script sees them all. Each
// bucket keeps a share of the waitlist (stock.Keys.Waitlist, Offers,
// Claims): a unit released in a bucket waits in that bucket's pool
// (restore.lua, release.lua), and an offer to a buyer lives in the buyer's
// home bucket, where admit.lua claims it in the step that checks and sets
// the buyer mark. One order is served, the item's: the gate walks the whole
// line and gives the units, wherever they wait, to the first tickets whose
// buyers hold nothing. For a buyer whose bucket's pool is short it first
// moves units from another bucket's pool to theirs (PoolMover: a waitlist
// transfer of pkg/rebalance, idempotent and crash-safe across the two
// slots and MySQL), then offers in that bucket with waitlist_offer.lua, as
// for an unbucketed item. So a unit is, at any moment, in one bucket's
// pool, on one offer, in one reservation, in one bucket's stock, or in one
// open transfer between two pools, and each step that moves it is one
// script in one slot or a guarded transfer step.
//
// A pass, for one item:
//  1. reads every bucket's share (waitlist_read.lua, pipelined); finishes
//     a waitlist transfer a mover left half way (units moving, Moving);
//  2. lapses each bucket's offers whose window ended (back to its pool),
//     and once the sale is over gives every pool back to its bucket's
//     stock;
//  3. takes the tickets after the item's line (bucket 0's waitlist field
//     line: every ticket before it was considered) and reads, for each, in
//     one pipelined round trip, whether its buyer holds the item or an
//     offer in their home bucket (a hint: the offer's script checks again);
//  4. chooses, in line order, as many of the others as the pools hold
//     units, and moves units to the buckets short of their chosen
//     (at most maxMovesPerPass transfers a pass);
//  5. runs waitlist_offer.lua in each chosen buyer's bucket with that
//     bucket's tickets up to its last chosen one: each bucket's cursor,
//     like an unbucketed item's, keeps a ticket from being considered
//     twice;
//  6. moves the line on past every ticket considered (waitlist_line.lua,
//     which never moves it back), stopping at the first one not yet
//     served; and when every ticket of the line was considered with units
//     left, gives each pool back to its bucket's stock.
//
// Without a mover (a gate built without one, as some tests do), each
// bucket's units are offered to its own buyers only: a ticket whose bucket
// holds no unit when the gate reaches it is passed over.

// PoolMover moves units of a bucketed item's waitlist between its buckets'
// pools: pkg/rebalance's Rebalancer (MovePool, ResumePool), which the
// reaper's main hands the gate. MovePool returns the units moved: 0 when
// the donor's pool no longer had them. ResumePool finishes the item's
// waitlist transfers left open.
type PoolMover interface {
	MovePool(ctx context.Context, itemID int64, buckets, from, to int, qty int64) (int64, error)
	ResumePool(ctx context.Context, itemID int64) error
}

// maxMovesPerPass bounds one item's waitlist transfers in one pass (each a
// MySQL transaction and three Redis steps): the rest wait for the next
// pass, a gate interval later.
const maxMovesPerPass = 16

// standing is a ticket's place in one pass of a bucketed item's waitlist.
type standing int

const (
	// passed: nobody to offer to (considered before, or its buyer holds
	// the item or an offer), or, without a mover, nothing in its bucket.
	passed standing = iota
	// chosen: a unit is meant for it this pass, in its home bucket.
	chosen
	// waiting: its buyer may be offered a unit, and none is left.
	waiting
)

// waitlistBuckets runs bucketed item it's waitlist (st: the gate's state
// this pass read).
func (g *Gate) waitlistBuckets(ctx context.Context, it Item, st GateState) error {
	n := it.Buckets
	w, err := g.readShares(ctx, it.ID, n)
	if err != nil {
		return err
	}
	if w.Moving() != 0 && g.cfg.Mover != nil {
		// A transfer between two pools is open: a mover died half way,
		// or (two gate holders) another is moving now. Finish it.
		if err := g.cfg.Mover.ResumePool(ctx, it.ID); err != nil {
			return fmt.Errorf("waitlist: resume transfers: %w", err)
		}
		if w, err = g.readShares(ctx, it.ID, n); err != nil {
			return err
		}
	}
	if w.Pool+w.Offers == 0 {
		return nil
	}
	shares := w.PerBucket
	ended := !g.now().Before(it.EndsAt)
	for b := range shares {
		if shares[b].Offers > 0 || (ended && shares[b].Pool > 0) {
			p, err := g.offerIn(ctx, it, b, nil, false)
			if err != nil {
				return err
			}
			shares[b].Pool, shares[b].Offers = p.Pool, p.Offers
		}
	}
	if ended {
		return nil
	}
	line := w.Cursor
	for range maxCallsPerItem {
		var pool, offers int64
		for _, s := range shares {
			pool, offers = pool+s.Pool, offers+s.Offers
		}
		if pool == 0 {
			return nil
		}
		ln, err := g.lineOf(ctx, it, st.Tickets)
		if err != nil {
			return err
		}
		from := min(max(int(line), 0), len(ln.cands))
		to := min(from+max(minCandidates, 4*int(pool+offers)), len(ln.cands))
		cands, end := ln.cands[from:to], to == len(ln.cands)
		homes, free, err := g.eligible(ctx, it.ID, n, cands)
		if err != nil {
			return err
		}
		stand, need := choose(cands, homes, free, shares, g.cfg.Mover != nil)
		var errs []error
		if g.cfg.Mover != nil {
			if err := g.gather(ctx, it, shares, need, cands, homes, stand); err != nil {
				errs = append(errs, err) // the buckets that got their units are offered all the same
			}
		}
		for h, sent := range sendTo(cands, homes, stand, shares) {
			p, err := g.offerIn(ctx, it, h, sent, false)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			shares[h].Pool, shares[h].Offers, shares[h].Cursor = p.Pool, p.Offers, p.Cursor
		}
		reached := progress(line, cands, homes, stand, shares)
		if reached > line {
			if err := g.moveLine(ctx, it.ID, reached); err != nil {
				return errors.Join(append(errs, err)...)
			}
		}
		all := len(cands) == 0 || reached == cands[len(cands)-1].Position
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if end && all {
			// Every ticket in line was considered: what is left goes
			// back to the stock, bucket by bucket.
			for b := range shares {
				if shares[b].Pool > 0 {
					p, err := g.offerIn(ctx, it, b, nil, true)
					if err != nil {
						return err
					}
					shares[b].Pool, shares[b].Offers = p.Pool, p.Offers
				}
			}
			return nil
		}
		if end || reached <= line {
			return nil
		}
		line = reached
	}
	return nil
}

// choose gives each of cands (homes: their buyers' home buckets; free:
// whether the buyer holds neither the item nor an offer there) its
// standing this pass, in line order, and counts the units each bucket needs
// for its chosen tickets. With a mover the units of every pool serve the
// line in order; without one, each bucket's units its own buyers.
func choose(cands []Candidate, homes []int, free []bool, shares []Waitlist, mover bool) ([]standing, []int64) {
	stand := make([]standing, len(cands))
	need := make([]int64, len(shares))
	left := make([]int64, len(shares))
	var budget int64
	for b, s := range shares {
		left[b] = s.Pool
		budget += s.Pool
	}
	for i, c := range cands {
		h := homes[i]
		switch {
		case c.Position <= shares[h].Cursor || !free[i]:
			stand[i] = passed
		case budget == 0:
			stand[i] = waiting
		case !mover && left[h] == 0:
			stand[i] = passed
		default:
			stand[i] = chosen
			need[h]++
			budget--
			left[h]--
		}
	}
	return stand, need
}

// gather moves units to the buckets whose pools are short of their chosen
// tickets' need, from the pools with units to spare, the bucket of the
// earliest chosen ticket first, at most maxMovesPerPass transfers. shares'
// pools are updated with what moved.
func (g *Gate) gather(ctx context.Context, it Item, shares []Waitlist, need []int64, cands []Candidate, homes []int, stand []standing) error {
	spare := make([]int64, len(shares))
	for b, s := range shares {
		spare[b] = max(s.Pool-need[b], 0)
	}
	var order []int
	seen := make([]bool, len(shares))
	for i := range cands {
		if h := homes[i]; stand[i] == chosen && !seen[h] {
			seen[h] = true
			order = append(order, h)
		}
	}
	moves := 0
	for _, h := range order {
		for shares[h].Pool < need[h] && moves < maxMovesPerPass {
			donor := -1
			for b, s := range spare {
				if s > 0 && (donor < 0 || s > spare[donor]) {
					donor = b
				}
			}
			if donor < 0 {
				return nil
			}
			qty := min(need[h]-shares[h].Pool, spare[donor])
			moves++
			got, err := g.cfg.Mover.MovePool(ctx, it.ID, it.Buckets, donor, h, qty)
			if err != nil {
				return fmt.Errorf("waitlist: move %d units from bucket %d to %d: %w", qty, donor, h, err)
			}
			g.m.Waitlist.WithLabelValues("moved").Add(float64(got))
			shares[h].Pool += got
			shares[donor].Pool -= got
			spare[donor] -= qty
			if got < qty {
				spare[donor] = 0 // its pool was short: offered meanwhile
			}
		}
	}
	return nil
}

// sendTo is, by bucket, the tickets its offer call is given: those of its
// buyers not yet considered there, up to its last chosen one (the script
// passes over the others among them and moves the bucket's cursor on).
func sendTo(cands []Candidate, homes []int, stand []standing, shares []Waitlist) map[int][]Candidate {
	last := map[int]int{}
	for i := range cands {
		if stand[i] == chosen {
			last[homes[i]] = i
		}
	}
	out := map[int][]Candidate{}
	for i, c := range cands {
		h := homes[i]
		if l, ok := last[h]; ok && i <= l && c.Position > shares[h].Cursor {
			out[h] = append(out[h], c)
		}
	}
	return out
}

// progress is how far the line may move on from line: past every ticket
// passed over or considered in its bucket (shares' cursors after the offer
// calls), up to the first one chosen and not reached (its bucket ran out)
// or waiting for a unit.
func progress(line int64, cands []Candidate, homes []int, stand []standing, shares []Waitlist) int64 {
	for i, c := range cands {
		if stand[i] == waiting || (stand[i] == chosen && c.Position > shares[homes[i]].Cursor) {
			break
		}
		line = c.Position
	}
	return line
}

// readShares reads item itemID's n buckets' shares within the store
// timeout.
func (g *Gate) readShares(ctx context.Context, itemID int64, n int) (Waitlist, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	w, err := g.wr.ReadShares(ctx, itemID, n)
	if err != nil {
		return Waitlist{}, fmt.Errorf("waitlist: %w", err)
	}
	return w, nil
}

// offerIn runs bucket's share of item it's waitlist with cands
// (OfferReleasedIn), counts and logs what it did.
func (g *Gate) offerIn(ctx context.Context, it Item, bucket int, cands []Candidate, endOfLine bool) (OfferPass, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	p, err := g.wr.OfferReleasedIn(ctx, it.ID, bucket, g.cfg.ClaimWindow, cands, endOfLine)
	if err != nil {
		return OfferPass{}, fmt.Errorf("waitlist: bucket %d: %w", bucket, err)
	}
	g.m.Waitlist.WithLabelValues("offered").Add(float64(p.Offered))
	g.m.Waitlist.WithLabelValues("lapsed").Add(float64(p.Lapsed))
	g.m.Waitlist.WithLabelValues("returned").Add(float64(p.Returned))
	if p.Offered+p.Lapsed+p.Returned > 0 {
		g.log.Info("waitlist", "item_id", it.ID, "bucket", bucket, "offered", p.Offered, "lapsed", p.Lapsed,
			"returned", p.Returned, "pool", p.Pool, "offers", p.Offers, "cursor", p.Cursor)
	}
	return p, nil
}

// moveLine moves item itemID's line on to reached (waitlist_line.lua).
func (g *Gate) moveLine(ctx context.Context, itemID int64, reached int64) error {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	q := stock.QueueKeysOf(itemID)
	if err := g.wr.eval(ctx, waitlistLineScript, []string{q.Waitlist, q.Meta}, reached).Err(); err != nil {
		return fmt.Errorf("waitlist: line: %w", unavailable("waitroom: waitlist line", err))
	}
	return nil
}

// eligible is, for each of cands, its buyer's home bucket of item itemID's
// n and whether the buyer holds neither the item (no buyer mark) nor an
// offer there: one pipelined round trip (on a Cluster, one per node).
func (g *Gate) eligible(ctx context.Context, itemID int64, n int, cands []Candidate) ([]int, []bool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	homes := make([]int, len(cands))
	held := make([]*redis.BoolCmd, len(cands))
	offered := make([]*redis.BoolCmd, len(cands))
	_, err := g.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range cands {
			homes[i] = stock.HomeBucket(c.UserID, n)
			k, u := stock.BucketKeys(itemID, homes[i]), strconv.FormatInt(c.UserID, 10)
			held[i] = p.HExists(ctx, k.Holders, u)
			offered[i] = p.HExists(ctx, k.Offers, u)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("waitlist: %w", unavailable("waitroom: waitlist candidates", err))
	}
	free := make([]bool, len(cands))
	for i := range cands {
		free[i] = !held[i].Val() && !offered[i].Val()
	}
	return homes, free, nil
}
