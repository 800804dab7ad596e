package draw

import (
	"fmt"
	"math"
	"slices"
)

// Round is one shuffle of the rounds scheme (transcript version 2, spelled
// out byte by byte in docs/fairness.md). Round 0 holds the tickets taken
// before starts_at; rounds 1..n each hold the tickets that arrived within one
// fixed slice of the shuffle window after it; tickets after the last round
// are served in arrival order. Which arrival number closes a round is the
// caller's (the server's clock) decision; here it is data.
//
// A round is the contiguous range of arrival numbers First..Last, First being
// the previous round's Last+1 (1 for round 0); an empty round has
// Last = First-1. When it closes, the server publishes Root, the Merkle root
// of its tickets (MerkleRoot), which fixes its members before anyone can
// compute their order: the round's seed (RoundSeed) is derived from the
// server seed and that root, and from Beacon, a public random value fixed in
// advance and published after the close, when there is one.
type Round struct {
	N     int   `json:"n"`
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	// Root is MerkleRoot of the round's tickets, in hex.
	Root string `json:"root"`
	// Beacon is the beacon value in hex, "" when the round has none.
	Beacon string `json:"beacon"`
	// Seed is the round's derived seed in hex, once revealed; "" before.
	Seed string `json:"seed"`
}

// Size is the number of arrivals the round covers.
func (r Round) Size() int64 { return r.Last - r.First + 1 }

// CloseRound returns round n over arrivals first..last with its Root: the
// Merkle root of those of tickets whose arrival is in that range. tickets may
// hold others (they are left out) and be in any order. The Beacon and Seed
// are left empty: the beacon is published after the close, and the seed is
// revealed after the beacon.
func CloseRound(n int, first, last int64, tickets []Entry) (Round, error) {
	r := Round{N: n, First: first, Last: last}
	if first < 1 || last < first-1 || n < 0 || int64(n) > math.MaxUint32 {
		return Round{}, fmt.Errorf("%w: round %d over arrivals %d..%d", ErrRounds, n, first, last)
	}
	var in []Entry
	for _, e := range tickets {
		if e.Arrival >= first && e.Arrival <= last {
			in = append(in, e)
		}
	}
	slices.SortFunc(in, byArrival)
	root, err := MerkleRoot(in)
	if err != nil {
		return Round{}, fmt.Errorf("round %d: %w", n, err)
	}
	r.Root = root
	return r, nil
}

// checkRounds checks the rounds' shape: numbered 0, 1, ... in order, covering
// contiguous arrivals from 1, each with a well-formed root and beacon. It
// does not read Seed.
func checkRounds(rounds []Round) error {
	var prev int64
	for i, r := range rounds {
		if r.N != i {
			return fmt.Errorf("%w: round %d is listed as number %d", ErrRounds, i, r.N)
		}
		if r.First != prev+1 || r.Last < r.First-1 {
			return fmt.Errorf("%w: round %d covers arrivals %d..%d, want it to start at %d",
				ErrRounds, i, r.First, r.Last, prev+1)
		}
		if _, err := decodeHash(r.Root); err != nil {
			return fmt.Errorf("%w: round %d root: %w", ErrRounds, i, err)
		}
		if _, err := decodeBeacon(r.Beacon); err != nil {
			return fmt.Errorf("%w: round %d: %w", ErrRounds, i, err)
		}
		prev = r.Last
	}
	return nil
}
