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
		s, waiting := drawSale(t)
		// retry lets the waiting buyers try again in an order of rapid's
		// choosing: one served leaves; one refused raises its bucket's
		// flag to its qty (admit.lua), and leaves too when the buckets
		// together hold less than its qty (410, the bucket promise).
		retry := func(round int) {
			order := rapid.Permutation(waiting).Draw(t, fmt.Sprintf("order%d", round))
			waiting = waiting[:0]
			for _, b := range order {
				if !s.try(b) && b.qty <= s.total() {
					waiting = append(waiting, b)
				}
			}
		}
		s.runPasses(t, len(waiting)+1, retry)
		s.expectNoneCoverable(t, waiting)
	})
}

// waitingBuyer is a buyer retrying in its home bucket for qty units.
type waitingBuyer struct {
	home int
	qty  int64
}

// sale is what the liveness properties run passes over: each bucket's
// stock (-1: no stock key) and want flag, with the flag's qty.
type sale struct {
	stocks []int64
	want   []bool
	need   []int64
}

// drawSale draws 1 to 12 buckets of -1 to 12 units with no flag raised,
// and 1 to 3 buyers a bucket, of 1 to 3 units each, homed anywhere.
func drawSale(t *rapid.T) (*sale, []waitingBuyer) {
	n := rapid.IntRange(1, 12).Draw(t, "buckets")
	s := &sale{stocks: rapid.SliceOfN(rapid.Int64Range(-1, 12), n, n).Draw(t, "stocks"), want: make([]bool, n), need: make([]int64, n)}
	var buyers []waitingBuyer
	for i := range rapid.IntRange(1, 3*n).Draw(t, "buyers") {
		buyers = append(buyers, waitingBuyer{
			home: rapid.IntRange(0, n-1).Draw(t, fmt.Sprintf("home%d", i)),
			qty:  rapid.Int64Range(1, 3).Draw(t, fmt.Sprintf("qty%d", i)),
		})
	}
	return s, buyers
}

// total is the units the buckets hold together.
func (s *sale) total() int64 {
	var sum int64
	for _, st := range s.stocks {
		sum += max(st, 0)
	}
	return sum
}

// try is b's attempt, as admit.lua answers it: served from its home
// bucket when that holds b's qty (true); else refused, the bucket's flag
// raised to b's qty (but in a bucket with no stock key, where the script
// answers before the flag).
func (s *sale) try(b waitingBuyer) bool {
	if s.stocks[b.home] >= b.qty {
		s.stocks[b.home] -= b.qty
		return true
	}
	if s.stocks[b.home] >= 0 {
		s.want[b.home], s.need[b.home] = true, b.qty
	}
	return false
}

// runPasses runs passes rebalancer passes over s, each after retry(pass)
// let the buyers try again, and checks each pass's moves; a move that
// covers its bucket's flag clears it (transfer_in.lua). A last retry
// follows the last pass.
func (s *sale) runPasses(t *rapid.T, passes int, retry func(round int)) {
	var prev []int64
	for pass := range passes {
		retry(pass)
		moves := Plan(s.stocks, s.want, s.need, prev)
		checkMoves(t, s.stocks, moves)
		s.stocks = after(s.stocks, moves)
		for _, m := range moves {
			if s.stocks[m.To] >= s.need[m.To] {
				s.want[m.To], s.need[m.To] = false, 0 // transfer_in.lua
			}
		}
		prev = s.stocks
	}
	retry(passes)
}

// expectNoneCoverable fails t if a buyer still waiting asks for no more
// than the buckets hold together, in a home bucket with a stock key.
func (s *sale) expectNoneCoverable(t *rapid.T, waiting []waitingBuyer) {
	for _, b := range waiting {
		if b.qty <= s.total() && s.stocks[b.home] >= 0 {
			t.Fatalf("a buyer of %d homed on bucket %d still waits with %d units left: stocks %v, wants %v, needs %v",
				b.qty, b.home, s.total(), s.stocks, s.want, s.need)
		}
	}
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
