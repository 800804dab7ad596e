package draw

import (
	"bytes"
	"cmp"
	"slices"
)

// Entry is one ticket as the transcript shows it: its hash and its arrival
// number (1 for the item's first ticket).
type Entry struct {
	Ticket  string `json:"ticket"`
	Arrival int64  `json:"arrival"`
}

// Order returns the tickets in serving order: those with arrival <= shuffled
// (taken before starts_at) by ascending Rank under seed, then the rest by
// arrival. The input is not changed. Equal ranks (two equal hashes, which
// Verify refuses) keep arrival order, so Order is deterministic.
func Order(seed Seed, tickets []Entry, shuffled int64) []Entry {
	type ranked struct {
		e Entry
		r [32]byte
	}
	early := make([]ranked, 0, len(tickets))
	var late []Entry
	for _, e := range tickets {
		if e.Arrival <= shuffled {
			early = append(early, ranked{e, Rank(seed, e.Ticket)})
		} else {
			late = append(late, e)
		}
	}
	slices.SortFunc(early, func(a, b ranked) int {
		if c := bytes.Compare(a.r[:], b.r[:]); c != 0 {
			return c
		}
		return cmp.Compare(a.e.Arrival, b.e.Arrival)
	})
	slices.SortFunc(late, func(a, b Entry) int { return cmp.Compare(a.Arrival, b.Arrival) })
	out := make([]Entry, 0, len(tickets))
	for _, r := range early {
		out = append(out, r.e)
	}
	return append(out, late...)
}
