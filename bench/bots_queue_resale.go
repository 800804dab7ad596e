package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The resale (-bots-unpaid F, issue 25's "released units re-sold to the
// waitlist before the sale ends"): in the queued run a fraction F of the
// accounts never pays the order it wins, the others pay it at once. When
// the payment window passes, the reaper cancels an unpaid order and, the
// item being sold out while its sale is open, its unit goes to the
// waitlist, which the gate offers to the next ticket in line whose buyer
// holds nothing, for the claim window. So in this mode:
//
//   - every player told sold out keeps long-polling its ticket (?wait=10s;
//     the server answers when an offer or stock comes) until the resale is
//     over; a human pauses -humans-retry and a bot -bots-retry before asking
//     again when a poll comes back at once with nothing new;
//   - a player whose ticket shows "offered" claims the unit with the offer
//     grant at once (POST /api/v1/orders, qty 1), bots and humans alike,
//     except the -bots-decline share of the humans, who let it lapse and
//     leave; a claim refused 403 offer_gone goes back to polling;
//   - every 202 (own grant or claim) is followed to its order, which the
//     account pays or, if it is one of the F, leaves unpaid.
//
// The run watches the item's audit once a second from the start and ends
// the players when the resale is quiet (watchResale): sold out, nothing
// pending or unpaid, the waitlist holding nothing, on two reads in a row;
// or at the bound (-bots-resale-wait after the sell-out, else derived from
// the payment and claim windows and the last unpaid order's expiry). The report (ResaleStats) gives the
// waitlist's counts from the final audit, what the buyers saw of the
// offers and claims, and the bots' share of the re-sold units.

// seenOffer is one waitlist offer as its buyer first saw it: the answer's
// arrival (the bench's clock) and the grant's grant_expires_at (the
// server's).
type seenOffer struct {
	At      time.Time
	Expires time.Time
}

// settledOrder is what became of an account's 202: the order's status as
// the account last read it and, when it was UNPAID, its expires_at and
// what the account did.
type settledOrder struct {
	RequestID string
	Status    string
	// AcceptedAt is the 202's arrival (the bench's clock); ExpiresAt the
	// order's expires_at (the server's).
	AcceptedAt time.Time
	ExpiresAt  time.Time
	// LeftUnpaid: the account never pays. Paid: its pay was answered 2xx;
	// PayRefused: 409 (not payable: the reaper was first); PayErrors
	// counts the other failures.
	LeftUnpaid bool
	Paid       bool
	PayRefused bool
	PayErrors  int
}

// resalePlay is the resale's shared state: who pays and who declines, the
// client of the order status and the pay, and what the players learnt of
// the server's windows.
type resalePlay struct {
	api *API
	// offset is how far the server's clock is ahead of the bench's.
	offset  time.Duration
	unpaid  map[string]bool // bearer -> never pays
	decline map[string]bool // bearer -> lets an offer lapse

	mu sync.Mutex
	// lastExpiry is the latest expires_at (the bench's clock) of an order
	// left unpaid; payWindow the least expires_at - 202 seen (the payment
	// window, plus the order's write); claimLeft the most claim window
	// left on an offer at its sight.
	lastExpiry time.Time
	payWindow  time.Duration
	claimLeft  time.Duration
}

// newResalePlay picks, reproducibly from seed, the accounts that never pay
// (a fraction unpaid of all) and the humans (bearers[:humans]) who decline
// an offer (a fraction decline of them).
func newResalePlay(api *API, offset time.Duration, bearers []string, humans int, unpaid, decline float64, seed int64) *resalePlay {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x726573616c65))
	p := &resalePlay{api: api, offset: offset, unpaid: map[string]bool{}, decline: map[string]bool{}}
	for i, b := range bearers {
		if rng.Float64() < unpaid {
			p.unpaid[b] = true
		}
		if d := rng.Float64(); i < humans && d < decline {
			p.decline[b] = true
		}
	}
	return p
}

// sawOffer notes an offer's claim window left at its sight.
func (p *resalePlay) sawOffer(o seenOffer) {
	left := o.Expires.Sub(o.At.Add(p.offset))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claimLeft = max(p.claimLeft, left)
}

// sawOrder notes an UNPAID order's expires_at.
func (p *resalePlay) sawOrder(o settledOrder) {
	win := o.ExpiresAt.Sub(o.AcceptedAt.Add(p.offset))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.payWindow == 0 || win < p.payWindow {
		p.payWindow = win
	}
	if o.LeftUnpaid && o.ExpiresAt.Add(-p.offset).After(p.lastExpiry) {
		p.lastExpiry = o.ExpiresAt.Add(-p.offset)
	}
}

// learnt is what the players learnt: the latest expiry of an unpaid
// order, the payment window and the claim window left (0: not seen).
func (p *resalePlay) learnt() (lastExpiry time.Time, payWindow, claimLeft time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastExpiry, p.payWindow, p.claimLeft
}

// claim plays the offer st, answered at now: a decliner lets it lapse and
// leaves; anyone else orders the unit with the offer grant. true when the
// player is done (a 202 settled, already a holder, declined, or too many
// tries); false to read the ticket again (offer_gone, or an answer worth
// another try after the pause).
func (g *queueGame) claim(ctx context.Context, r *ticketRun, bearer string, st ticketState, now time.Time, retry time.Duration) bool {
	n := len(r.Offers)
	if n == 0 || !r.Offers[n-1].Expires.Equal(st.GrantExpiresAt) {
		o := seenOffer{At: now, Expires: st.GrantExpiresAt}
		r.Offers = append(r.Offers, o)
		g.resale.sawOffer(o)
	}
	if g.resale.decline[bearer] {
		r.Declined = true
		return true
	}
	if r.Claim.Attempts >= maxOwnOrders {
		return true
	}
	switch out := g.order(ctx, &r.Claim, bearer, st.AdmissionGrant); out {
	case OutAccepted:
		r.ClaimLatency = r.Claim.WonAt.Sub(r.Offers[len(r.Offers)-1].At)
		g.settle(ctx, r, bearer, r.Claim.RequestID)
		return true
	case OutAlready:
		return true
	case "403 offer_gone":
		return false
	default:
		return !sleepUntil(ctx, time.Now().Add(retry))
	}
}

// settle follows the account's 202 (request rid) to its order, as the
// buyer's page would, and pays it unless the account never pays; a no-op
// outside the resale.
func (g *queueGame) settle(ctx context.Context, r *ticketRun, bearer, rid string) {
	p := g.resale
	if p == nil {
		return
	}
	r.Order = settledOrder{RequestID: rid, AcceptedAt: time.Now()}
	if r.Claim.Won && r.Claim.RequestID == rid {
		r.Order.AcceptedAt = r.Claim.WonAt
	} else if r.Won {
		r.Order.AcceptedAt = r.WonAt
	}
	o := &r.Order
	for ctx.Err() == nil {
		st, err := p.api.Status(ctx, bearer, rid, 5*time.Second)
		if err != nil {
			if !sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
				return
			}
			continue
		}
		if o.Status = st.Status; st.Status == "PENDING" {
			continue
		}
		if st.Status != "UNPAID" {
			return
		}
		o.ExpiresAt, o.LeftUnpaid = st.ExpiresAt, p.unpaid[bearer]
		p.sawOrder(*o)
		if o.LeftUnpaid {
			return
		}
		for o.PayErrors < 3 && ctx.Err() == nil {
			switch err := p.api.Pay(ctx, bearer, rid); {
			case err == nil:
				o.Paid, o.Status = true, "PAID"
				return
			case isStatus(err, http.StatusConflict):
				o.PayRefused = true
				return
			default:
				o.PayErrors++
				sleepUntil(ctx, time.Now().Add(200*time.Millisecond))
			}
		}
		return
	}
}

// quietReads is how many audit reads in a row must find the resale quiet.
const quietReads = 2

// resaleEnd is how and when the resale ended.
type resaleEnd struct {
	Why string // "quiet", "bound", "players done", "run timeout"
	// SoldOutAt is the first audit read with no Redis stock (the bench's
	// clock); At the end; Bound the wait bound then in force.
	SoldOutAt, At time.Time
	Bound         time.Duration
}

// resaleBound is how long after the sell-out (soldOut) the resale may go
// on: -bots-resale-wait if given; else until 4 claim windows (a few lapses
// in a row) and 30 s after the latest expiry of an order left unpaid
// (lastExpiry, which each re-sold unit left unpaid again moves on), and
// at least a payment window after the sell-out. Each window is as given
// or as learnt (payWindow, claimLeft), else the server's default (15m,
// 1m) before anything was seen, so a run with the defaults lasts.
func resaleBound(bs BotSettings, soldOut, lastExpiry time.Time, payWindow, claimLeft time.Duration) time.Duration {
	if bs.ResaleWait > 0 {
		return bs.ResaleWait
	}
	pw, cw := bs.PaymentWindow, bs.ClaimWindow
	if pw == 0 {
		pw = cmpOr(payWindow, 15*time.Minute)
	}
	if cw == 0 {
		cw = cmpOr(claimLeft.Round(time.Second), time.Minute)
	}
	return max(pw, lastExpiry.Sub(soldOut)) + 4*cw + 30*time.Second
}

// cmpOr is d, or or when d is not positive.
func cmpOr(d, or time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return or
}

// resaleQuiet is whether audit au leaves the resale nothing more to do:
// sold out, nothing reserved or unpaid, the waitlist holding no unit.
func resaleQuiet(au Audit) bool {
	w := au.Waitlist
	return au.RedisStock == 0 && au.Pending == 0 && au.Unpaid == 0 && w != nil && w.Pool == 0 && w.Offers == 0
}

// watchResale reads item id's audit once a second from start until the
// resale is over (resaleEnd.Why): quiet on quietReads reads in a row, and
// past the expiry of every order left unpaid; past the bound after the
// sell-out (resaleBound); every player done; or ctx's end.
func watchResale(ctx context.Context, api *API, id int64, p *resalePlay, bs BotSettings, start time.Time, done <-chan struct{}) resaleEnd {
	var end resaleEnd
	if !sleepUntil(ctx, start) {
		end.Why, end.At = "run timeout", time.Now()
		return end
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	quiet := 0
	for {
		select {
		case <-done:
			end.Why, end.At = "players done", time.Now()
			return end
		case <-ctx.Done():
			end.Why, end.At = "run timeout", time.Now()
			return end
		case <-tick.C:
		}
		au, err := api.Audit(ctx, id)
		now := time.Now()
		if err != nil {
			quiet = 0
			continue
		}
		if end.SoldOutAt.IsZero() && au.RedisStock == 0 {
			end.SoldOutAt = now
			slog.Info("bots: resale: sold out, waiting for the releases and claims", "item", id)
		}
		if end.SoldOutAt.IsZero() {
			continue
		}
		lastExpiry, pw, cl := p.learnt()
		end.Bound = resaleBound(bs, end.SoldOutAt, lastExpiry, pw, cl)
		if now.Sub(end.SoldOutAt) > end.Bound {
			end.Why, end.At = "bound", now
			return end
		}
		if !resaleQuiet(au) || !now.After(lastExpiry) {
			quiet = 0
			continue
		}
		if quiet++; quiet >= quietReads {
			end.Why, end.At = "quiet", now
			return end
		}
	}
}

// ResaleStats is what the resale adds to a queued run's report.
type ResaleStats struct {
	UnpaidFraction  float64 `json:"unpaid_fraction"`
	DeclineFraction float64 `json:"decline_fraction"`
	// Orders counts the 202s followed to an order (own grant and claims);
	// Paid of them were paid, LeftUnpaid left to the reaper; PayRefused
	// paid too late (409), PayErrors failed pays.
	Orders     int `json:"orders"`
	Paid       int `json:"paid"`
	LeftUnpaid int `json:"left_unpaid"`
	PayRefused int `json:"pay_refused"`
	PayErrors  int `json:"pay_errors"`
	// PaymentWindowMS and ClaimWindowMS are the windows as given by the
	// flags, else as learnt (…Learnt): the least expires_at − 202 of the
	// orders (the window plus the order's write), and the most claim
	// window left on an offer at its sight (the window minus how late it
	// was seen); 0 when nothing was seen.
	PaymentWindowMS     float64 `json:"payment_window_ms"`
	PaymentWindowLearnt bool    `json:"payment_window_learnt"`
	ClaimWindowMS       float64 `json:"claim_window_ms"`
	ClaimWindowLearnt   bool    `json:"claim_window_learnt"`
	// Waitlist is the final audit's: units Released into it (in), Offered,
	// Claimed (re-sold), Lapsed, Returned to the stock, and still held in
	// its Pool or on Offers.
	Released int64 `json:"released"`
	Offered  int64 `json:"offered"`
	Claimed  int64 `json:"claimed"`
	Lapsed   int64 `json:"lapsed"`
	Returned int64 `json:"returned"`
	Pool     int64 `json:"pool"`
	Offers   int64 `json:"offers"`
	// What the buyers saw: offers on their tickets (by bots), declined,
	// claims answered 202 (by bots), 403 offer_gone, and the bots' share
	// of the re-sold units (their claims over all).
	OffersSeen        int     `json:"offers_seen"`
	BotOffersSeen     int     `json:"bot_offers_seen"`
	Declined          int     `json:"declined"`
	Claims            int     `json:"claims"`
	BotClaims         int     `json:"bot_claims"`
	OfferGone         int     `json:"offer_gone"`
	BotsShareOfResold float64 `json:"bots_share_of_resold"`
	// HolderClaims counts claims accepted from accounts that had won a
	// unit already (the waitlist offers only to buyers who hold nothing:
	// one would be a unit sold twice to one buyer).
	HolderClaims int `json:"holder_claims"`
	// OffersUnseen is the audit's offers no player's ticket showed
	// (offered - offers seen): made to a ticket whose player had left, or
	// lapsed before its long poll answered.
	OffersUnseen int64 `json:"offers_unseen"`
	// OfferToClaim is, per claim, the buyer's first sight of the offer to
	// the claim's 202; OfferSeen, per offer, how long after it was made
	// its buyer saw it (the claim window minus what was left at the
	// sight: with a learnt window, relative to the quickest sight).
	OfferToClaimP50MS float64 `json:"offer_to_claim_p50_ms"`
	OfferToClaimP90MS float64 `json:"offer_to_claim_p90_ms"`
	OfferToClaimMaxMS float64 `json:"offer_to_claim_max_ms"`
	OfferSeenP50MS    float64 `json:"offer_seen_p50_ms"`
	OfferSeenP90MS    float64 `json:"offer_seen_p90_ms"`
	// End is why the resale ended (quiet, bound, players done, run
	// timeout), EndAfterSellOutMS when after the sell-out the run's audit
	// found, and BoundMS the wait bound then.
	End               string  `json:"end"`
	EndAfterSellOutMS float64 `json:"end_after_sell_out_ms"`
	BoundMS           float64 `json:"bound_ms"`
	// AuditOK is the final audit's ok (I1–I9; I9: every released unit in
	// exactly one place).
	AuditOK bool `json:"audit_ok"`
}

// summarizeResale reduces the runs (humans first) and the run's end; the
// waitlist's counts come from the final audit (fillResaleAudit).
func summarizeResale(runs []ticketRun, humans int, p *resalePlay, bs BotSettings, end resaleEnd) *ResaleStats {
	st := &ResaleStats{UnpaidFraction: bs.Unpaid, DeclineFraction: bs.Decline, End: end.Why, BoundMS: ms(end.Bound)}
	if !end.SoldOutAt.IsZero() {
		st.EndAfterSellOutMS = ms(end.At.Sub(end.SoldOutAt))
	}
	var toClaim []time.Duration
	var seen []seenOffer
	for i, r := range runs {
		bot := i >= humans
		if o := r.Order; o.Status != "" {
			st.Orders++
			if o.Paid {
				st.Paid++
			}
			if o.LeftUnpaid {
				st.LeftUnpaid++
			}
			if o.PayRefused {
				st.PayRefused++
			}
			st.PayErrors += o.PayErrors
		}
		st.OffersSeen += len(r.Offers)
		seen = append(seen, r.Offers...)
		if bot {
			st.BotOffersSeen += len(r.Offers)
		}
		if r.Declined {
			st.Declined++
		}
		st.OfferGone += r.Claim.Outcomes["403 offer_gone"]
		if r.Claim.Won {
			st.Claims++
			if bot {
				st.BotClaims++
			}
			toClaim = append(toClaim, r.ClaimLatency)
			if r.Won {
				st.HolderClaims++
			}
		}
	}
	if st.Claims > 0 {
		st.BotsShareOfResold = float64(st.BotClaims) / float64(st.Claims)
	}
	slices.Sort(toClaim)
	st.OfferToClaimP50MS, st.OfferToClaimP90MS = ms(quantile(toClaim, .5)), ms(quantile(toClaim, .9))
	if n := len(toClaim); n > 0 {
		st.OfferToClaimMaxMS = ms(toClaim[n-1])
	}
	_, pw, cl := p.learnt()
	st.PaymentWindowMS, st.PaymentWindowLearnt = ms(pw), bs.PaymentWindow == 0
	if !st.PaymentWindowLearnt {
		st.PaymentWindowMS = ms(bs.PaymentWindow)
	}
	cw := cl
	if st.ClaimWindowLearnt = bs.ClaimWindow == 0; !st.ClaimWindowLearnt {
		cw = bs.ClaimWindow
	}
	st.ClaimWindowMS = ms(cw)
	var late []time.Duration
	for _, o := range seen {
		late = append(late, max(cw-o.Expires.Sub(o.At.Add(p.offset)), 0))
	}
	slices.Sort(late)
	st.OfferSeenP50MS, st.OfferSeenP90MS = ms(quantile(late, .5)), ms(quantile(late, .9))
	return st
}

// fillResaleAudit copies the final audit's waitlist and verdict.
func fillResaleAudit(st *ResaleStats, au *Audit) {
	if au == nil {
		return
	}
	st.AuditOK = au.OK
	if w := au.Waitlist; w != nil {
		st.Released, st.Offered, st.Claimed, st.Lapsed, st.Returned, st.Pool, st.Offers = w.In, w.Offered, w.Claimed, w.Lapsed, w.Returned, w.Pool, w.Offers
		st.OffersUnseen = max(st.Offered-int64(st.OffersSeen), 0)
	}
}

// resaleChecks are the resale's promises as the buyers can check them: a
// claim refused only as offer_gone; the buyers' 202s to claims are the
// waitlist's claimed units; no claim from a buyer who won a unit already;
// no offer or claim without a unit released; a
// release when orders were left unpaid in a sold-out sale whose payment
// window ended before the run did; the waitlist empty at a quiet end.
func resaleChecks(st *ResaleStats, claimOutcomes map[string]int, soldOut bool) []string {
	var c []string
	for _, k := range slices.Sorted(maps.Keys(claimOutcomes)) {
		if code, ok := strings.CutPrefix(k, "403 "); ok && code != "offer_gone" {
			c = append(c, fmt.Sprintf("waitlist: a claim with an offer grant refused %d times as %s, not offer_gone", claimOutcomes[k], code))
		}
	}
	if int64(st.Claims) != st.Claimed {
		c = append(c, fmt.Sprintf("waitlist: buyers got %d claims accepted, the audit counts %d units claimed", st.Claims, st.Claimed))
	}
	if st.HolderClaims > 0 {
		c = append(c, fmt.Sprintf("waitlist: %d claims accepted from buyers who had won a unit already", st.HolderClaims))
	}
	if st.Claimed > st.Released || int64(st.OffersSeen) > st.Offered {
		c = append(c, fmt.Sprintf("waitlist: %d claimed and %d offers seen of %d offered, from %d units released", st.Claimed, st.OffersSeen, st.Offered, st.Released))
	}
	if soldOut && st.LeftUnpaid > 0 && st.Released == 0 && st.End == "quiet" {
		c = append(c, fmt.Sprintf("waitlist: %d orders left unpaid in a sold-out sale and none of their units reached the waitlist", st.LeftUnpaid))
	}
	if st.End == "quiet" && st.Pool+st.Offers > 0 {
		c = append(c, fmt.Sprintf("waitlist: the resale was quiet but the final audit holds %d units in the pool and %d on offer", st.Pool, st.Offers))
	}
	return c
}

// writeResale prints the resale's lines.
func writeResale(w io.Writer, st *ResaleStats) {
	learnt := func(b bool) string {
		if b {
			return "learnt"
		}
		return "given"
	}
	fmt.Fprintf(w, "  resale: %.0f%% of the accounts never pay, %.0f%% of the humans decline an offer; %d orders followed: %d paid, %d left unpaid, %d paid too late, %d pay errors\n",
		100*st.UnpaidFraction, 100*st.DeclineFraction, st.Orders, st.Paid, st.LeftUnpaid, st.PayRefused, st.PayErrors)
	fmt.Fprintf(w, "    payment window %.1f s (%s), claim window %.1f s (%s); ended %s %.1f s after the sell-out (bound %.0f s)\n",
		st.PaymentWindowMS/1000, learnt(st.PaymentWindowLearnt), st.ClaimWindowMS/1000, learnt(st.ClaimWindowLearnt), st.End, st.EndAfterSellOutMS/1000, st.BoundMS/1000)
	fmt.Fprintf(w, "    waitlist (audit): %d released, %d offered, %d claimed (re-sold), %d lapsed, %d returned to the stock, %d still in the pool, %d on offer; audit ok=%v\n",
		st.Released, st.Offered, st.Claimed, st.Lapsed, st.Returned, st.Pool, st.Offers, st.AuditOK)
	fmt.Fprintf(w, "    buyers: %d offers seen (%d by bots; %d offered that no ticket showed), %d declined, %d claims accepted (%d by bots: %.1f%% of the re-sold units), %d offer_gone\n",
		st.OffersSeen, st.BotOffersSeen, st.OffersUnseen, st.Declined, st.Claims, st.BotClaims, 100*st.BotsShareOfResold, st.OfferGone)
	fmt.Fprintf(w, "    offer seen -> claim's 202: p50 %.0f ms, p90 %.0f ms, max %.0f ms; offer made -> seen: p50 %.0f ms, p90 %.0f ms\n",
		st.OfferToClaimP50MS, st.OfferToClaimP90MS, st.OfferToClaimMaxMS, st.OfferSeenP50MS, st.OfferSeenP90MS)
}
