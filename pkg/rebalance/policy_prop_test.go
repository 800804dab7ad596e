package rebalance

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// The policy's properties, checked with rapid over generated items (1 to
// 12 buckets, -1 to 12 units each, -1 being a bucket with no stock key) and
// buyers of 1 to 3 units (the per-user limit the scenarios use, plus qty
// above it would only be refused earlier, by the script):
//
//   - Safety, every pass: a move names two different buckets that both
//     have a stock key, carries at least one unit, and the moves of a pass
//     never take from a bucket more than it holds (so never out of an empty
//     one); the units of the item are conserved.
//   - Liveness, over passes: buyers waiting in their home buckets retry
//     each pass (a refused buyer sets the want flag to its qty, as
//     admit.lua does, and transfer_in.lua clears it once the stock covers
//     it; a buyer asking more than the buckets hold together is answered
//     410 and leaves, its flag left behind); after at most one pass per
//     buyer plus one, every buyer left waiting asks for more than the
//     buckets hold together. So a buyer
//     whom the stock can cover is served by some sequence of planned moves,
//     whoever else waits, in whatever order they retry.
//
// A case is a few microseconds: policyChecks runs 2,000 per property.
func TestPropPolicySafePass(t *testing.T) {
	t.Parallel()
	policyChecks(t, func(t *rapid.T) {
		stocks, want, need, prev := drawView(t)
		moves := Plan(stocks, want, need, prev)
		checkMoves(t, stocks, moves)
	})
}

func TestPropPolicyServesEveryCoverableBuyer(t *testing.T) {
	t.Parallel()
	policyChecks(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "buckets")
		stocks := rapid.SliceOfN(rapid.Int64Range(-1, 12), n, n).Draw(t, "stocks")
		type buyer struct {
			home int
			qty  int64
		}
		var waiting []buyer
		for i := range rapid.IntRange(1, 3*n).Draw(t, "buyers") {
			waiting = append(waiting, buyer{
				home: rapid.IntRange(0, n-1).Draw(t, fmt.Sprintf("home%d", i)),
				qty:  rapid.Int64Range(1, 3).Draw(t, fmt.Sprintf("qty%d", i)),
			})
		}
		want, need := make([]bool, n), make([]int64, n)
		// retry lets the waiting buyers try again in an order of rapid's
		// choosing: one served leaves; one refused raises its bucket's
		// flag to its qty (admit.lua), and leaves too when the buckets
		// together hold less than its qty (410, the bucket promise).
		retry := func(round int) {
			order := rapid.Permutation(waiting).Draw(t, fmt.Sprintf("order%d", round))
			waiting = waiting[:0]
			for _, b := range order {
				if stocks[b.home] >= b.qty {
					stocks[b.home] -= b.qty
					continue
				}
				if stocks[b.home] >= 0 { // no stock key: the script answers before the flag
					want[b.home], need[b.home] = true, b.qty
				}
				var sum int64
				for _, s := range stocks {
					sum += max(s, 0)
				}
				if b.qty <= sum {
					waiting = append(waiting, b)
				}
			}
		}
		var prev []int64
		passes := len(waiting) + 1
		for pass := range passes {
			retry(pass)
			moves := Plan(stocks, want, need, prev)
			checkMoves(t, stocks, moves)
			stocks = after(stocks, moves)
			for _, m := range moves {
				if stocks[m.To] >= need[m.To] {
					want[m.To], need[m.To] = false, 0 // transfer_in.lua
				}
			}
			prev = stocks
		}
		retry(passes)
		var sum int64
		for _, s := range stocks {
			sum += max(s, 0)
		}
		for _, b := range waiting {
			if b.qty <= sum && stocks[b.home] >= 0 {
				t.Fatalf("a buyer of %d homed on bucket %d still waits with %d units left: stocks %v, wants %v, needs %v",
					b.qty, b.home, sum, stocks, want, need)
			}
		}
	})
}

// policyChecks runs prop over 2,000 cases: 20 rapid runs of its default
// 100, each from a seed of its own (printed on a failure), where the
// rapid.checks flag would change every property of the package.
func policyChecks(t *testing.T, prop func(*rapid.T)) {
	t.Helper()
	for range 20 {
		rapid.Check(t, prop)
		if t.Failed() {
			return
		}
	}
}

// drawView draws one pass's input: stocks (-1: no key), want flags, the
// flags' qty and, half the time, the previous pass's stocks.
func drawView(t *rapid.T) (stocks []int64, want []bool, need []int64, prev []int64) {
	n := rapid.IntRange(1, 12).Draw(t, "buckets")
	stocks = rapid.SliceOfN(rapid.Int64Range(-1, 12), n, n).Draw(t, "stocks")
	want = rapid.SliceOfN(rapid.Bool(), n, n).Draw(t, "want")
	need = rapid.SliceOfN(rapid.Int64Range(0, 40), n, n).Draw(t, "need")
	if rapid.Bool().Draw(t, "hasPrev") {
		prev = rapid.SliceOfN(rapid.Int64Range(-1, 12), n, n).Draw(t, "prev")
	}
	return stocks, want, need, prev
}

// checkMoves fails t unless moves are a safe pass over stocks: real
// buckets, positive quantities, no donor overdrawn, units conserved.
func checkMoves(t *rapid.T, stocks []int64, moves []Move) {
	left := append([]int64(nil), stocks...)
	for _, m := range moves {
		if m.From < 0 || m.From >= len(stocks) || m.To < 0 || m.To >= len(stocks) || m.From == m.To {
			t.Fatalf("stocks %v: move %+v names no pair of buckets", stocks, m)
		}
		if stocks[m.From] < 0 || stocks[m.To] < 0 {
			t.Fatalf("stocks %v: move %+v touches a bucket with no stock key", stocks, m)
		}
		if m.Qty < 1 {
			t.Fatalf("stocks %v: move %+v of no unit", stocks, m)
		}
		if left[m.From] < m.Qty {
			t.Fatalf("stocks %v: moves %+v take %d from bucket %d holding %d then", stocks, moves, m.Qty, m.From, left[m.From])
		}
		left[m.From] -= m.Qty
		left[m.To] += m.Qty
	}
	var before, later int64
	for b := range stocks {
		before += max(stocks[b], 0)
		later += max(left[b], 0)
	}
	if before != later {
		t.Fatalf("stocks %v: moves %+v change the total %d to %d", stocks, moves, before, later)
	}
}
