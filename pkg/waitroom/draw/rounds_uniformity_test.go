package draw_test

import (
	"math/rand/v2"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// TestRoundShuffleIsUniform is TestShuffleIsUniform for a round of the rounds
// scheme: over many server seeds, each of the k tickets of round 1 (behind a
// round 0 of 3) lands in each of the round's k places equally often, by a
// chi-square of the k x k table against the 0.999 quantile with (k-1)^2
// degrees of freedom. The round's root and beacon stay fixed, so only the
// server seed varies, as it does between sales of the same tickets.
func TestRoundShuffleIsUniform(t *testing.T) {
	const (
		k, seeds = uniformK, uniformSeeds
		before   = 3
	)
	src := rand.NewChaCha8([32]byte{'u', 'n', 'i', 'f', 2})
	entries := make([]draw.Entry, before+k)
	for i := range entries {
		id, err := draw.NewTicketID(src)
		if err != nil {
			t.Fatal(err)
		}
		entries[i] = draw.Entry{Ticket: draw.Hash(id), Arrival: int64(i + 1)}
	}
	r0, err := draw.CloseRound(0, 1, before, entries)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := draw.CloseRound(1, before+1, before+k, entries)
	if err != nil {
		t.Fatal(err)
	}
	r1.Beacon = "0a0b0c0d"
	rounds := []draw.Round{r0, r1}
	var counts placeCounts
	for range seeds {
		seed, err := draw.NewSeed(src)
		if err != nil {
			t.Fatal(err)
		}
		order, err := draw.OrderRounds(seed, 42, rounds, entries)
		if err != nil {
			t.Fatal(err)
		}
		for pos, e := range order[before:] {
			counts[e.Arrival-before-1][pos]++
		}
	}
	counts.expectUniform(t, "the round's shuffle")
}
