package main

import (
	"flag"
	"fmt"
	"time"
)

// BotSettings are -bots' flags (bots.go): how many bot accounts race the
// -buyers humans for -units, when the sale starts, how early the bots fire
// and how fast they retry, and how the humans' arrivals spread around the
// start.
type BotSettings struct {
	// Bots is the number of bot accounts; 0 leaves the mode off.
	Bots int
	// StartIn is how long after the item is created its sale starts.
	StartIn time.Duration
	// Lead is how long before the start, by the server's clock, the bots
	// fire their first attempt.
	Lead time.Duration
	// Retry is a bot's pause between attempts: the ingress's per-user rate
	// limit (5 a second by default) allows one every 200 ms.
	Retry time.Duration
	// HumansBefore and HumansAfter bound the humans' arrivals, uniformly
	// from StartIn-HumansBefore to StartIn+HumansAfter.
	HumansBefore, HumansAfter time.Duration
	// HumanRetry is a human's polite pause after "not open yet", a 429 or
	// a 503.
	HumanRetry time.Duration
	// Queue runs the same mix against an item with its waiting room on
	// (bots_queue.go): everyone takes a ticket, the gate admits QueueRate
	// tickets a second from the start and an order needs the admission
	// grant of its own ticket; the bots still try to skip the queue.
	Queue bool
	// QueueRate is the item's queue_rate, admissions per second.
	QueueRate int
	// QueueOpenIn is how long after the item is created its waiting room
	// opens (queue_opens_at), before the start.
	QueueOpenIn time.Duration
	// QueueWindow is the queued item's shuffle window: arrivals up to this
	// long after the start are drawn with those before it (negative: the
	// server's default, 10 s).
	QueueWindow time.Duration
	// Compare runs both modes in one invocation on fresh items, first
	// come first served then with the queue, and reports them side by
	// side (bots_compare.go).
	Compare bool
	// Unpaid, above 0, plays the waitlist's resale in the queued run
	// (bots_queue_resale.go): that fraction of the accounts never pays
	// an order it wins, the others pay at once, and every ticket told
	// sold out keeps long-polling until it is offered a released unit
	// (it claims it) or the resale is over. 0 is the queued run as
	// before: nobody pays, a sold-out ticket ends its player. The first
	// come first served run never pays.
	Unpaid float64
	// Decline is the fraction of the humans who let an offer lapse (the
	// bots claim every offer at once); it needs Unpaid.
	Decline float64
	// PaymentWindow and ClaimWindow are the server's
	// FLASHSALE_PAYMENT_WINDOW and FLASHSALE_QUEUE_CLAIM_WINDOW as the
	// resale's wait bound uses them; 0 learns them from the answers (an
	// UNPAID order's expires_at, an offer's grant_expires_at).
	PaymentWindow, ClaimWindow time.Duration
	// ResaleWait bounds the resale after the sell-out; 0 derives the
	// bound from the windows and the last unpaid order (resaleBound).
	ResaleWait time.Duration
}

// RegisterFlags implements config.Registerer.
func (b *BotSettings) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&b.Bots, "bots", 0, "adversary mode: this many bot accounts (user ids after the -buyers humans) race the humans for -units; 0 = off")
	fs.DurationVar(&b.StartIn, "bots-start-in", 5*time.Second, "the sale starts this long after the item is created")
	fs.DurationVar(&b.Lead, "bots-lead", 500*time.Millisecond, "bots fire their first attempt this long before the start, by the server's clock (read from its Date header)")
	fs.DurationVar(&b.Retry, "bots-retry", 200*time.Millisecond, "a bot's pause between attempts (the per-user rate limit's spacing)")
	fs.DurationVar(&b.HumansBefore, "humans-before", 2*time.Second, "humans arrive uniformly from this long before the start ...")
	fs.DurationVar(&b.HumansAfter, "humans-after", 8*time.Second, "... to this long after it")
	fs.DurationVar(&b.HumanRetry, "humans-retry", time.Second, "a human's pause before trying again after 'not open yet', 429 or 503")
	fs.BoolVar(&b.Queue, "bots-queue", false, "run the -bots mix against an item with its waiting room on: tickets, the gate's pace, orders with an admission grant (the bots also try to skip the queue)")
	fs.IntVar(&b.QueueRate, "bots-queue-rate", 200, "the queued item's queue_rate: admissions per second from the start, 1 to 100000")
	fs.DurationVar(&b.QueueOpenIn, "bots-queue-open-in", 500*time.Millisecond, "the waiting room opens this long after the item is created (before the start)")
	fs.DurationVar(&b.QueueWindow, "bots-queue-window", -1, "the queued item's queue_shuffle_window_ms: arrivals up to this long after the start are drawn with the early ones (0 = only before the start, as before issue 41; negative = the server's default, 10s)")
	fs.BoolVar(&b.Compare, "bots-compare", false, "run the -bots mix twice in one invocation on fresh items, first come first served then with the queue, and report them side by side")
	fs.Float64Var(&b.Unpaid, "bots-unpaid", 0, "queued run: this fraction of the accounts never pays an order it wins (the others pay at once), and sold-out tickets wait for the waitlist's offers of the released units and claim them; 0 = off (nobody pays, sold out ends a player)")
	fs.Float64Var(&b.Decline, "bots-decline", 0, "with -bots-unpaid: this fraction of the humans lets a waitlist offer lapse (bots claim every offer)")
	fs.DurationVar(&b.PaymentWindow, "bots-payment-window", 0, "with -bots-unpaid: the server's FLASHSALE_PAYMENT_WINDOW for the resale's wait bound; 0 = learn it from the orders' expires_at")
	fs.DurationVar(&b.ClaimWindow, "bots-claim-window", 0, "with -bots-unpaid: the reaper's FLASHSALE_QUEUE_CLAIM_WINDOW for the resale's wait bound; 0 = learn it from the offers' grant_expires_at (1m, the reaper's default, before any offer)")
	fs.DurationVar(&b.ResaleWait, "bots-resale-wait", 0, "with -bots-unpaid: the most the run waits after the sell-out for the unpaid orders' release, the offers and their claims; 0 = until 4 x claim window + 30s after the last unpaid order's expiry (at least a payment window after the sell-out)")
}

// Validate implements config.Registerer.
func (b *BotSettings) Validate() error {
	if b.Bots == 0 {
		if b.Queue || b.Compare || b.Unpaid != 0 || b.Decline != 0 {
			return fmt.Errorf("FLASHSALE_BOTS_QUEUE, FLASHSALE_BOTS_COMPARE, FLASHSALE_BOTS_UNPAID, FLASHSALE_BOTS_DECLINE: need -bots (FLASHSALE_BOTS) above 0")
		}
		return nil
	}
	switch {
	case b.Bots < 0 || b.Bots > 1_000_000:
		return fmt.Errorf("FLASHSALE_BOTS: %d (expected 0 to 1000000 accounts)", b.Bots)
	case b.Lead < 0 || b.StartIn <= b.Lead || b.StartIn > 10*time.Minute:
		return fmt.Errorf("FLASHSALE_BOTS_START_IN, FLASHSALE_BOTS_LEAD: %v, %v (expected a start up to 10m away, after the bots' lead)", b.StartIn, b.Lead)
	case b.HumansBefore < 0 || b.HumansBefore > b.StartIn || b.HumansAfter < 0 || b.HumansBefore+b.HumansAfter <= 0:
		return fmt.Errorf("FLASHSALE_HUMANS_BEFORE, FLASHSALE_HUMANS_AFTER: %v, %v (expected a non-empty spread whose start is not before now)", b.HumansBefore, b.HumansAfter)
	case b.Retry <= 0 || b.HumanRetry <= 0:
		return fmt.Errorf("FLASHSALE_BOTS_RETRY, FLASHSALE_HUMANS_RETRY: expected positive durations")
	case (b.Queue || b.Compare) && (b.QueueRate < 1 || b.QueueRate > 100_000):
		return fmt.Errorf("FLASHSALE_BOTS_QUEUE_RATE: %d (expected 1 to 100000 admissions a second, the item's queue_rate)", b.QueueRate)
	case (b.Queue || b.Compare) && (b.QueueOpenIn < 0 || b.QueueOpenIn >= b.StartIn):
		return fmt.Errorf("FLASHSALE_BOTS_QUEUE_OPEN_IN: %v (expected 0 or more, before the start %v away)", b.QueueOpenIn, b.StartIn)
	case !fraction(b.Unpaid) || !fraction(b.Decline):
		return fmt.Errorf("FLASHSALE_BOTS_UNPAID, FLASHSALE_BOTS_DECLINE: %v, %v (expected fractions from 0 to 1)", b.Unpaid, b.Decline)
	case b.Unpaid > 0 && !b.Queue && !b.Compare:
		return fmt.Errorf("FLASHSALE_BOTS_UNPAID: %v needs the queued run (-bots-queue or -bots-compare): the waitlist is the waiting room's", b.Unpaid)
	case b.Decline > 0 && b.Unpaid == 0:
		return fmt.Errorf("FLASHSALE_BOTS_DECLINE: %v needs -bots-unpaid above 0 (no unit is released to offer otherwise)", b.Decline)
	case b.PaymentWindow < 0 || b.ClaimWindow < 0 || b.ResaleWait < 0:
		return fmt.Errorf("FLASHSALE_BOTS_PAYMENT_WINDOW, FLASHSALE_BOTS_CLAIM_WINDOW, FLASHSALE_BOTS_RESALE_WAIT: expected 0 (learned or derived) or positive durations")
	}
	return nil
}
