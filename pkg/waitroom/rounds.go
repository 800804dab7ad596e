package waitroom

import (
	"time"
)

// The rounds of an item's waiting room (docs/fairness.md). Without a
// shuffle window there is one round, the tickets taken before starts_at.
// With one, the rounds split the window after starts_at into slices of the
// item's round length, and the first round also holds every ticket taken
// before starts_at: arriving before the start is worth no more than
// arriving in the first slice after it (a bot that fires at the start is
// drawn with the humans who learn of it a few seconds later). A ticket
// taken after the window is served in arrival order. A ticket's round is fixed by when
// it was taken (Redis' clock, in ticket_take.lua), and since arrival numbers
// follow that clock each round is a contiguous run of arrivals. A round is
// closed, and its ticket set final, once Redis' clock has passed its end:
// the gate then publishes its Merkle root (rounds_close.go), and only then
// can anyone order it.

// Late is the round of a ticket taken after the shuffle window.
const Late = -1

// rounds is how many rounds item it has: one without a window, else the
// window's slices.
func rounds(it Item) int {
	if it.QueueShuffleWindow <= 0 || it.QueueRound <= 0 {
		return 1
	}
	return int((it.QueueShuffleWindow + it.QueueRound - 1) / it.QueueRound)
}

// DrawAt is when item it's first round closes and the first tickets get
// their places: starts_at without a shuffle window, a round length after it
// with one. Nobody is admitted before.
func DrawAt(it Item) time.Time { return roundEnd(it, 0) }

// roundEnd is when round k of item it closes: starts_at without a window;
// with one, a round length after starts_at for round 0, a round length
// later for each next round, the last at the window's end.
func roundEnd(it Item, k int) time.Time {
	if it.QueueShuffleWindow <= 0 || it.QueueRound <= 0 {
		return it.StartsAt
	}
	return it.StartsAt.Add(min(time.Duration(k+1)*it.QueueRound, it.QueueShuffleWindow))
}

// windowEnd is when item it's last round closes: from then on arrivals
// are served as they come.
func windowEnd(it Item) time.Time { return roundEnd(it, rounds(it)-1) }

// RoundOf is the round of a ticket of item it taken at takenAt, Late after
// the window.
func RoundOf(it Item, takenAt time.Time) int {
	for k := range rounds(it) {
		if takenAt.Before(roundEnd(it, k)) {
			return k
		}
	}
	return Late
}
