package draw_test

import (
	"math/rand/v2"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// TestShuffleIsUniform checks that over many seeds each of k tickets lands in
// each of the k places equally often: a chi-square of the k x k table of
// (ticket, position) counts. The source is deterministic, so the test cannot
// flake; the bound is the 0.999 quantile of chi-square with (k-1)^2 degrees
// of freedom (the table's rows and columns each sum to the number of seeds).
func TestShuffleIsUniform(t *testing.T) {
	const k, seeds = uniformK, uniformSeeds
	src := rand.NewChaCha8([32]byte{'u', 'n', 'i', 'f'})
	entries := make([]draw.Entry, k)
	for i := range k {
		id, err := draw.NewTicketID(src)
		if err != nil {
			t.Fatal(err)
		}
		entries[i] = draw.Entry{Ticket: draw.Hash(id), Arrival: int64(i + 1)}
	}
	var counts placeCounts
	for range seeds {
		seed, err := draw.NewSeed(src)
		if err != nil {
			t.Fatal(err)
		}
		for pos, e := range draw.Order(seed, entries, k) {
			counts[e.Arrival-1][pos]++
		}
	}
	counts.expectUniform(t, "the shuffle")
}

// The uniformity tests draw uniformK tickets' places over uniformSeeds
// server seeds; uniformBound is the 0.999 quantile of chi-square with
// (uniformK-1)^2 = 49 degrees of freedom.
const (
	uniformK     = 8
	uniformSeeds = 20000
	uniformBound = 85.35
)

// placeCounts counts, by ticket and place, how often each ticket landed in
// each place.
type placeCounts [uniformK][uniformK]int

// expectUniform fails t when the chi-square of c against equal counts (the
// rows and columns each sum to uniformSeeds) is above uniformBound: what
// shuffled is not uniform.
func (c *placeCounts) expectUniform(t *testing.T, what string) {
	t.Helper()
	expected := float64(uniformSeeds) / uniformK
	var chi float64
	for i := range uniformK {
		for p := range uniformK {
			d := float64(c[i][p]) - expected
			chi += d * d / expected
		}
	}
	t.Logf("chi-square %.1f over %d seeds (bound %.2f)", chi, uniformSeeds, uniformBound)
	if chi > uniformBound {
		t.Fatalf("chi-square %.1f > %.2f: %s is not uniform; counts %v", chi, uniformBound, what, *c)
	}
}
