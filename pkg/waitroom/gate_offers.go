package waitroom

import (
	"context"
	"fmt"
	"time"
)

// The waitlist's hand-off (issue 25): units the reaper released while an
// item's sale is open and sold out sit in the item's pool (waitlist.go; a
// bucketed item's, in its buckets' pools: gate_offers_buckets.go). The gate offers them, one unit per buyer, down the serving
// order from where it last stopped, passing over buyers who hold the item.
// The offer's script decides everything in Redis, in one step, so a pass
// that dies half-way, or two holders at once, cannot offer a unit twice:
// this side only supplies the line.

// defaultClaimWindow is GateConfig.ClaimWindow's default.
const defaultClaimWindow = time.Minute

// minCandidates is the fewest tickets a waitlist call is given: enough to
// pass over a run of buyers who already hold the item.
const minCandidates = 256

// maxCallsPerItem bounds one pass's waitlist calls for one item, so a long
// line of holders is walked over a few passes rather than blocking one.
const maxCallsPerItem = 8

// line is an item's serving order as the gate last drew it.
type line struct {
	tickets int64 // the ticket count it was drawn from
	cands   []Candidate
}

// waitlist runs item it's waitlist while it has units in its pool or on
// offer (st, read by this pass's advance).
func (g *Gate) waitlist(ctx context.Context, it Item, st GateState) error {
	if it.Buckets > 1 {
		return g.waitlistBuckets(ctx, it, st)
	}
	if st.Pool+st.Offers == 0 {
		return nil
	}
	cursor := st.Cursor
	for range maxCallsPerItem {
		var cands []Candidate
		end := true
		if st.Pool > 0 || st.Offers > 0 {
			ln, err := g.lineOf(ctx, it, st.Tickets)
			if err != nil {
				return err
			}
			from := min(max(int(cursor), 0), len(ln.cands))
			n := max(minCandidates, 4*int(st.Pool+st.Offers))
			to := min(from+n, len(ln.cands))
			cands, end = ln.cands[from:to], to == len(ln.cands)
		}
		cctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
		p, err := g.wr.OfferReleased(cctx, it.ID, g.cfg.ClaimWindow, cands, end)
		cancel()
		if err != nil {
			return fmt.Errorf("waitlist: %w", err)
		}
		g.m.Waitlist.WithLabelValues("offered").Add(float64(p.Offered))
		g.m.Waitlist.WithLabelValues("lapsed").Add(float64(p.Lapsed))
		g.m.Waitlist.WithLabelValues("returned").Add(float64(p.Returned))
		if p.Offered+p.Lapsed+p.Returned > 0 {
			g.log.Info("waitlist", "item_id", it.ID, "offered", p.Offered, "lapsed", p.Lapsed,
				"returned", p.Returned, "pool", p.Pool, "offers", p.Offers, "cursor", p.Cursor)
		}
		// Go on only while units wait in the pool and the line goes on
		// beyond what this call was given.
		if p.Pool == 0 || end || p.Cursor <= cursor {
			return nil
		}
		cursor, st.Pool, st.Offers = p.Cursor, p.Pool, p.Offers
	}
	return nil
}

// lineOf is item it's serving order as candidates, drawn again when the
// ticket count is not the one it was drawn from (late tickets join at the
// end; the early ones' order is fixed once the sale starts).
func (g *Gate) lineOf(ctx context.Context, it Item, tickets int64) (line, error) {
	if ln, ok := g.lines[it.ID]; ok && ln.tickets == tickets {
		return ln, nil
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.StoreTimeout)
	defer cancel()
	ts, err := ServingLine(ctx, g.db, g.wr, it)
	if err != nil {
		return line{}, fmt.Errorf("waitlist: %w", err)
	}
	// Tickets of a round still open have no place yet: a line drawn
	// without them is drawn again at the next pass.
	ln := line{tickets: int64(len(ts))}
	for i, t := range ts {
		ln.cands = append(ln.cands, Candidate{Position: int64(i + 1), Ticket: t.ID, UserID: t.UserID})
	}
	g.lines[it.ID] = ln
	return ln, nil
}
