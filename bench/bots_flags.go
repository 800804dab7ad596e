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
}

// Validate implements config.Registerer.
func (b *BotSettings) Validate() error {
	if b.Bots == 0 {
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
	}
	return nil
}
