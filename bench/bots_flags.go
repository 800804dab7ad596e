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
	// Compare runs both modes in one invocation on fresh items, first
	// come first served then with the queue, and reports them side by
	// side (bots_compare.go).
	Compare bool
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
	fs.BoolVar(&b.Compare, "bots-compare", false, "run the -bots mix twice in one invocation on fresh items, first come first served then with the queue, and report them side by side")
}

// Validate implements config.Registerer.
func (b *BotSettings) Validate() error {
	if b.Bots == 0 {
		if b.Queue || b.Compare {
			return fmt.Errorf("FLASHSALE_BOTS_QUEUE, FLASHSALE_BOTS_COMPARE: need -bots (FLASHSALE_BOTS) above 0")
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
	}
	return nil
}
