package main

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The queue mode (-bots-queue) plays the bots mode's mix against an item
// with its waiting room on (issue 25 item 6):
//
//   - humans take a ticket at their arrival (spread around the start as in
//     the first-come-first-served mode; one arriving after the start queues
//     behind the shuffled tickets), read it once and then long-poll it
//     politely (?wait=10s) until it is admitted, then order once with its admission grant; sold out or
//     expired ends them;
//   - bots take a ticket from every account the moment the room opens and
//     play it the same way, ordering at once when admitted; meanwhile, from
//     the start minus -bots-lead, they try to skip the queue at the rate
//     limit: orders with no grant, and with a grant copied from another
//     bot (another buyer's).
//
// What the buyers saw is kept per ticket (ticketRun) and reduced afterwards
// (bots_queue_report.go): the bots' share of the units against their share
// of the tickets, the wait estimate's error, the waiting after the sell-out
// and the refusals of the skips.

// ticketRun is what one account did in the queue mode. Its buyerRun counts
// the orders made with the account's own grant.
type ticketRun struct {
	buyerRun
	// Ticket is the ticket's id, "" if the account never got one;
	// TicketAt the arrival of its 201/200 (the bench's clock) and TakenAt
	// the server's taken_at (before starts_at: shuffled).
	Ticket        string
	TicketAt      time.Time
	TakenAt       time.Time
	TicketAnswers map[string]int
	// Polls counts the ticket's status requests, PollAnswers the ones
	// that were not a 200.
	Polls       int
	PollAnswers map[string]int
	// SawStart is set by the first poll answered from starts_at on (it
	// has a position); FirstState is that answer's state, EstMS its
	// estimated_wait_ms, EstMoment its estimated_admission_at (the
	// server's clock; zero if absent) and EstAt its arrival, when it was
	// waiting.
	SawStart   bool
	FirstState string
	HasEst     bool
	EstMS      int64
	EstMoment  time.Time
	EstAt      time.Time
	// AdmittedAt is the first answer that said admitted; SoldOutAt the
	// first sight of the sell-out (a poll's sold_out, a 410 sold_out to a
	// ticket or an order); Expired a poll's expired.
	AdmittedAt time.Time
	SoldOutAt  time.Time
	Expired    bool
	// Skips and Copied count a bot's orders without a grant and with
	// another bot's grant by answer; BypassWins the ones that got a 202
	// (the queue skipped: a bug of the gate).
	Skips, Copied map[string]int
	BypassWins    int
	// The resale (-bots-unpaid, bots_queue_resale.go): Order is what
	// became of the account's 202 (its own grant's or its claim's);
	// Offers the waitlist offers its ticket showed; Declined that it let
	// one lapse and left; Claim its orders with an offer grant, and
	// ClaimLatency the time from its first sight of the offer it claimed
	// to the claim's 202.
	Order        settledOrder
	Offers       []seenOffer
	Declined     bool
	Claim        buyerRun
	ClaimLatency time.Duration
}

func newTicketRun() ticketRun {
	return ticketRun{buyerRun: buyerRun{Outcomes: map[string]int{}}, TicketAnswers: map[string]int{}, PollAnswers: map[string]int{},
		Skips: map[string]int{}, Copied: map[string]int{}, Claim: buyerRun{Outcomes: map[string]int{}}}
}

// sawSoldOut keeps the first sight of the sell-out.
func (r *ticketRun) sawSoldOut(at time.Time) {
	if r.SoldOutAt.IsZero() || at.Before(r.SoldOutAt) {
		r.SoldOutAt = at
	}
}

// queueGame is one queued item as its players reach it.
type queueGame struct {
	c *http.Client
	// poll is c's transport with room for the long poll in its timeout.
	poll   *http.Client
	paths  queuePaths
	item   int64
	grants *grantPool
	// resale, when set (-bots-unpaid), keeps sold-out tickets waiting for
	// the waitlist's offers and settles every win (pays or not).
	resale *resalePlay
}

func newQueueGame(c *http.Client, base string, item int64) *queueGame {
	poll := &http.Client{Transport: c.Transport, Timeout: c.Timeout + ticketPollWait}
	return &queueGame{c: c, poll: poll, paths: newQueuePaths(base, item), item: item, grants: &grantPool{}}
}

// maxOwnOrders bounds the orders one ticket makes with its own grant, so
// an answer the player does not expect (a bug) cannot spin it to the end.
const maxOwnOrders = 20

// human takes a ticket at arrive and plays it to its end.
func (g *queueGame) human(ctx context.Context, bearer string, arrive time.Time, retry time.Duration) ticketRun {
	r := newTicketRun()
	if g.takeTicket(ctx, &r, bearer, arrive, retry) {
		g.playTicket(ctx, &r, bearer, retry, nil)
	}
	return r
}

// bot takes a ticket at opens and plays it, and from skipFrom tries to
// skip the queue until its own ticket is admitted or the sale is decided
// for it.
func (g *queueGame) bot(ctx context.Context, self int, bearer string, opens, skipFrom time.Time, retry time.Duration) ticketRun {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := newTicketRun()
	var admitted atomic.Bool
	skipped := make(chan ticketRun, 1)
	go func() { skipped <- g.skip(ctx, cancel, self, bearer, skipFrom, retry, &admitted) }()
	if g.takeTicket(ctx, &r, bearer, opens, retry) {
		g.playTicket(ctx, &r, bearer, retry, func(st ticketState) {
			admitted.Store(true)
			g.grants.add(self, st.AdmissionGrant, st.GrantExpiresAt)
		})
	}
	cancel()
	sk := <-skipped
	r.Skips, r.Copied, r.BypassWins = sk.Skips, sk.Copied, sk.BypassWins
	if sk.Won && !r.Won {
		r.Won, r.RequestID, r.WonAt, r.WinLatency = true, sk.RequestID, sk.WonAt, sk.WinLatency
	}
	if !sk.SoldOutAt.IsZero() {
		r.sawSoldOut(sk.SoldOutAt)
	}
	return r
}

// takeTicket asks for the account's ticket from first on until it has one
// or is told the sale is over; false without a ticket.
func (g *queueGame) takeTicket(ctx context.Context, r *ticketRun, bearer string, first time.Time, retry time.Duration) bool {
	if !sleepUntil(ctx, first) {
		return false
	}
	r.Arrived = time.Now()
	for ctx.Err() == nil {
		code, b, _ := send(ctx, g.c, http.MethodPost, g.paths.tickets, bearer, nil)
		if ctx.Err() != nil {
			return false
		}
		label := answerLabel(code, b)
		r.TicketAnswers[label]++
		switch {
		case code == http.StatusOK || code == http.StatusCreated:
			var t takenTicket
			if json.Unmarshal(b, &t) == nil && t.Ticket != "" {
				r.Ticket, r.TicketAt, r.TakenAt = t.Ticket, time.Now(), t.TakenAt
				return true
			}
		case label == "410 sold_out":
			r.sawSoldOut(time.Now())
			return false
		case code == http.StatusGone:
			return false
		}
		if !sleepUntil(ctx, time.Now().Add(retry)) {
			return false
		}
	}
	return false
}

// playTicket long-polls the ticket until it is admitted, then orders with
// its grant; admitted (if not nil) hears the first admitted answer. It returns on a
// 202 or 409 already_purchased, on sold out or expired, or when ctx ends.
// In the resale (g.resale set) a 202 is settled first (paid or left
// unpaid), and sold out does not end the play: the ticket's long poll
// waits for a waitlist offer, which the player claims (or declines and
// leaves), or for stock again, until ctx ends.
func (g *queueGame) playTicket(ctx context.Context, r *ticketRun, bearer string, retry time.Duration, admitted func(ticketState)) {
	// The first read answers at once, as a page shows the place in line
	// when the ticket is taken; a long poll of a waiting ticket answers
	// only when it is admitted, sold out or the start draws the order, so
	// a ticket taken after the start would see no estimate otherwise.
	wait := time.Duration(0)
	var prev ticketState
	for ctx.Err() == nil && r.Attempts < maxOwnOrders {
		sent := time.Now()
		code, b, _ := send(ctx, g.poll, http.MethodGet, g.paths.ticketURL(r.Ticket, wait), bearer, nil)
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		r.Polls++
		var st ticketState
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil {
			r.PollAnswers[answerLabel(code, b)]++
			if !sleepUntil(ctx, now.Add(retry)) {
				return
			}
			continue
		}
		first := r.AdmittedAt.IsZero()
		r.sawPoll(st, now)
		switch st.State {
		case ticketSoldOut:
			r.sawSoldOut(now)
			if g.resale == nil {
				return
			}
			// Wait for an offer: a long poll that came back at once with
			// nothing new is not asked again at once.
			if cameBackEarly(sent, now, wait) && prev.State == ticketSoldOut && !sleepUntil(ctx, now.Add(retry)) {
				return
			}
			wait = ticketPollWait
		case ticketOffered:
			if g.resale == nil || g.claim(ctx, r, bearer, st, now, retry) {
				return
			}
			wait = 0 // read the ticket again: gone, or still offered
		case ticketExpired:
			r.Expired = true
			return
		case ticketAdmitted:
			if admitted != nil && first {
				admitted(st)
			}
			switch out := g.order(ctx, &r.buyerRun, bearer, st.AdmissionGrant); out {
			case OutAccepted:
				g.settle(ctx, r, bearer, r.RequestID)
				return
			case OutAlready:
				return
			case OutSoldOut:
				r.sawSoldOut(time.Now())
				if g.resale == nil {
					return
				}
				// The ticket may still read admitted for a moment (the
				// ingress answers from reads up to 150 ms old): a long
				// poll, answered at the sell-out, not a read at once
				// (a player read and ordered 20 times in that moment and
				// gave up, and the offer made to it later lapsed unseen).
				wait = ticketPollWait
				prev = st
				continue
			case "403 admission_expired":
				// Ask the ticket at once for a fresh grant.
			default:
				if !sleepUntil(ctx, time.Now().Add(retry)) {
					return
				}
			}
			wait = 0 // an admitted ticket's long poll waits for the end
		default:
			// A long poll that came back at once with nothing new (the
			// server's waiters are full) is not asked again at once.
			if cameBackEarly(sent, now, wait) && prev.State == ticketWaiting && (prev.Position == nil) == (st.Position == nil) &&
				!sleepUntil(ctx, now.Add(retry)) {
				return
			}
			wait = pollWait(st, r.Ticket, now)
		}
		prev = st
	}
}

// cameBackEarly reports whether a long poll that asked to wait for wait,
// sent at sent and answered at now, came back well before its wait (the
// server's waiters full, a read that failed): such a poll is not asked
// again at once. It is measured against the wait this poll asked for, not
// the usual one: a page's refresh just after the start asks for a few
// hundred ms, and its answer at that deadline, still without a place in
// line on a loaded machine (the round's close not yet published), is no
// refusal. Backing off there made the humans, who back off for a second
// where the bots back off for 200 ms, learn their admission late, and the
// admitted bots order first (cold runs 25 and 45).
func cameBackEarly(sent, now time.Time, wait time.Duration) bool {
	return wait > 0 && now.Sub(sent) < wait/2
}

// refreshSpread spreads the pages' refreshes at the start (pollWait).
const refreshSpread = 500 * time.Millisecond

// pollWait is the long poll's wait after answer st of ticket at now. Before
// the start a page refreshes once the order is drawn, to show its place in
// line: the server's long poll of a waiting ticket goes on across the start
// (it answers at the admission), so the wait is cut to end just after it,
// spread over refreshSpread by the ticket's hash so the pages do not all
// ask at once.
func pollWait(st ticketState, ticket string, now time.Time) time.Duration {
	if st.Position != nil || st.ShuffleAt.IsZero() || !now.Before(st.ShuffleAt) {
		return ticketPollWait
	}
	h := fnv.New32a()
	h.Write([]byte(ticket))
	jitter := time.Duration(h.Sum32()%uint32(refreshSpread.Milliseconds())) * time.Millisecond
	return min(ticketPollWait, st.ShuffleAt.Sub(now)+jitter+time.Millisecond)
}

// sawPoll notes the estimate of the first answer from starts_at on and the
// first admission.
func (r *ticketRun) sawPoll(st ticketState, at time.Time) {
	if !r.SawStart && st.Position != nil {
		r.SawStart, r.FirstState = true, st.State
		if st.State == ticketWaiting && st.EstimatedWaitMs != nil {
			r.HasEst, r.EstMS, r.EstAt = true, *st.EstimatedWaitMs, at
			if st.EstimatedAdmissionAt != nil {
				r.EstMoment = *st.EstimatedAdmissionAt
			}
		}
	}
	if st.State == ticketAdmitted && r.AdmittedAt.IsZero() {
		r.AdmittedAt = at
	}
}

// order sends one order with grant ("" none) and notes it in r: the
// attempt, its outcome and, for a 202, the win and its round trip.
func (g *queueGame) order(ctx context.Context, r *buyerRun, bearer, grant string) string {
	sent := time.Now()
	code, b, errText := post(ctx, g.c, g.paths.orders, bearer, grantOrderBody(g.item, grant))
	r.Attempts++
	out := botsOutcome(code, b, errText)
	r.Outcomes[out]++
	if out == OutAccepted {
		_, id, _ := Classify(code, b, errText)
		r.Won, r.RequestID, r.WonAt = true, id, time.Now()
		r.WinLatency = r.WonAt.Sub(sent)
	}
	return out
}

// skip is a bot's attempt to jump the queue: from first on, every retry,
// an order with another bot's grant when one is known and the last try was
// not one, else an order with no grant, until its own ticket is admitted,
// ctx ends or an answer decides the sale for it (a 202 is a bypass; sold
// out also stops the ticket's play, through stop). A copy goes out as soon
// as one is known, not on every other try: a sale that sells out within
// two retries of the first admission would otherwise see no copy at all
// (the bench's queue test failed so in CI, sold out 416 ms after the start
// with the bots' copies due on the tries at +50 and +450 ms).
func (g *queueGame) skip(ctx context.Context, stop context.CancelFunc, self int, bearer string, first time.Time, retry time.Duration, admitted *atomic.Bool) ticketRun {
	r := newTicketRun() // its Outcomes stay here: the skips are counted by kind
	if !sleepUntil(ctx, first) {
		return r
	}
	for copied := false; ctx.Err() == nil && !admitted.Load(); {
		counts, grant := r.Skips, ""
		if !copied {
			grant = g.grants.other(self, time.Now())
		}
		if copied = grant != ""; copied {
			counts = r.Copied
		}
		out := g.order(ctx, &r.buyerRun, bearer, grant)
		if ctx.Err() != nil {
			break
		}
		counts[out]++
		switch out {
		case OutAccepted:
			r.BypassWins++
			stop()
			return r
		case OutSoldOut:
			r.sawSoldOut(time.Now())
			if g.resale == nil {
				stop() // the ticket's play ends too; in the resale it waits for an offer
			}
			return r
		case OutAlready:
			return r
		}
		if !sleepUntil(ctx, time.Now().Add(retry)) {
			break
		}
	}
	return r
}

// grantPool is the grants the bots share, to try one another's.
type grantPool struct {
	mu     sync.Mutex
	recent []ownedGrant // the last few, newest last
}

type ownedGrant struct {
	owner   int
	grant   string
	expires time.Time
}

// copyMargin keeps a copied grant clear of its expiry, so that a copy is
// refused for being another buyer's (admission_invalid), not for its age.
const copyMargin = 2 * time.Second

func (p *grantPool) add(owner int, grant string, expires time.Time) {
	if grant == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recent = append(p.recent, ownedGrant{owner, grant, expires})
	if len(p.recent) > 4 {
		p.recent = p.recent[1:]
	}
}

// other is the newest grant of a bot other than self that is not about to
// expire, "" if none. (A grant without grant_expires_at never expires as
// far as the bench knows.)
func (p *grantPool) other(self int, now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.recent) - 1; i >= 0; i-- {
		g := p.recent[i]
		if g.owner != self && (g.expires.IsZero() || now.Add(copyMargin).Before(g.expires)) {
			return p.recent[i].grant
		}
	}
	return ""
}
