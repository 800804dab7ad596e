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
	const (
		k     = 8
		seeds = 20000
		// chi-square, 49 degrees of freedom, 0.999 quantile.
		bound = 85.35
	)
	src := rand.NewChaCha8([32]byte{'u', 'n', 'i', 'f'})
	entries := make([]draw.Entry, k)
	for i := range k {
		id, err := draw.NewTicketID(src)
		if err != nil {
			t.Fatal(err)
		}
		entries[i] = draw.Entry{Ticket: draw.Hash(id), Arrival: int64(i + 1)}
	}
	var counts [k][k]int
	for range seeds {
		seed, err := draw.NewSeed(src)
		if err != nil {
			t.Fatal(err)
		}
		for pos, e := range draw.Order(seed, entries, k) {
			counts[e.Arrival-1][pos]++
		}
	}
	expected := float64(seeds) / k
	var chi float64
	for i := range k {
		for p := range k {
			d := float64(counts[i][p]) - expected
			chi += d * d / expected
		}
	}
	t.Logf("chi-square %.1f over %d seeds (bound %.2f)", chi, seeds, bound)
	if chi > bound {
		t.Fatalf("chi-square %.1f > %.2f: the shuffle is not uniform; counts %v", chi, bound, counts)
	}
}
