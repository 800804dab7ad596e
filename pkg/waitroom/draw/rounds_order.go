package draw

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
)

// OrderRounds returns the tickets in serving order under the rounds scheme:
// round 0's tickets by ascending rank under its round seed, then round 1's
// under its own, and so on, then the tickets after the last round by arrival.
// A rank is Rank(RoundSeed(seed, item, round), hash), compared as 32 unsigned
// bytes, most significant first; equal ranks (only equal hashes give them)
// keep arrival order, so the order is a function of its inputs.
//
// Each round's root is recomputed from its tickets and must be the one the
// round carries (ErrRoot): an order is never drawn from a root that does not
// commit to the tickets it orders. Rounds must be numbered 0, 1, ... over
// contiguous arrivals from 1 (ErrRounds); tickets need distinct arrival
// numbers from 1 and hashes of 64 lower-case hex digits (ErrArrivals); gaps
// in the arrival numbers are allowed here (VerifyRounds refuses them). The
// rounds' Seed fields are not read: the seeds are derived. The input is not
// changed.
func OrderRounds(seed Seed, item int64, rounds []Round, tickets []Entry) ([]Entry, error) {
	if err := checkRounds(rounds); err != nil {
		return nil, err
	}
	sorted, err := sortedByArrival(tickets)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(sorted))
	rest := sorted
	for _, r := range rounds {
		n := 0
		for n < len(rest) && rest[n].Arrival <= r.Last {
			n++
		}
		in := rest[:n]
		rest = rest[n:]
		root, err := MerkleRoot(in)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r.N, err)
		}
		if root != r.Root {
			return nil, fmt.Errorf("%w: round %d (arrivals %d..%d, %d tickets) has root %s, its tickets give %s",
				ErrRoot, r.N, r.First, r.Last, len(in), r.Root, root)
		}
		rs, err := RoundSeed(seed, item, r)
		if err != nil {
			return nil, err
		}
		out = append(out, shuffle(rs, in)...)
	}
	return append(out, rest...), nil
}

// shuffle orders one round's tickets by ascending rank under its seed, equal
// ranks by arrival.
func shuffle(roundSeed Seed, in []Entry) []Entry {
	type ranked struct {
		e Entry
		r [32]byte
	}
	rs := make([]ranked, len(in))
	for i, e := range in {
		rs[i] = ranked{e, Rank(roundSeed, e.Ticket)}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := bytes.Compare(a.r[:], b.r[:]); c != 0 {
			return c
		}
		return byArrival(a.e, b.e)
	})
	out := make([]Entry, len(rs))
	for i, r := range rs {
		out[i] = r.e
	}
	return out
}

func byArrival(a, b Entry) int { return cmp.Compare(a.Arrival, b.Arrival) }

// sortedByArrival is a copy of tickets in ascending arrival, after checking
// each has a well-formed hash and a distinct arrival number from 1.
func sortedByArrival(tickets []Entry) ([]Entry, error) {
	sorted := slices.Clone(tickets)
	slices.SortFunc(sorted, byArrival)
	for i, e := range sorted {
		if e.Arrival < 1 || (i > 0 && e.Arrival == sorted[i-1].Arrival) {
			return nil, fmt.Errorf("%w: arrival %d (want distinct arrivals from 1)", ErrArrivals, e.Arrival)
		}
		if _, err := decodeHash(e.Ticket); err != nil {
			return nil, fmt.Errorf("%w: arrival %d: %w", ErrArrivals, e.Arrival, err)
		}
	}
	return sorted, nil
}

// LineRounds is tickets as the server holds them, in the order OrderRounds
// gives their hashes: the rounds say which arrivals are shuffled.
func LineRounds(seed Seed, item int64, rounds []Round, tickets []Held) ([]Held, error) {
	entries := make([]Entry, len(tickets))
	byArrivalNo := make(map[int64]Held, len(tickets))
	for i, t := range tickets {
		entries[i] = Entry{Ticket: Hash(t.ID), Arrival: t.Arrival}
		byArrivalNo[t.Arrival] = t
	}
	order, err := OrderRounds(seed, item, rounds, entries)
	if err != nil {
		return nil, err
	}
	out := make([]Held, len(order))
	for i, e := range order {
		out[i] = byArrivalNo[e.Arrival]
	}
	return out, nil
}
