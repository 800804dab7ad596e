package rebalance

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	w := func(bs ...int) []bool {
		out := make([]bool, 8)
		for _, b := range bs {
			out[b] = true
		}
		return out
	}
	cases := []struct {
		name   string
		stocks []int64
		want   []bool
		prev   []int64
		moves  []Move
	}{
		{"balanced, nobody wants", []int64{50, 50, 50, 50}, w(), nil, nil},
		{"all empty", []int64{0, 0, 0}, w(0, 1, 2), nil, nil},
		{"a wanting bucket gets half the fullest's lead", []int64{50, 0, 40, 50}, w(1), nil,
			[]Move{{From: 0, To: 1, Qty: 25}}},
		{"rounded up", []int64{0, 7}, w(0), nil, []Move{{From: 1, To: 0, Qty: 4}}},
		{"the last unit moves", []int64{0, 1}, w(0), nil, []Move{{From: 1, To: 0, Qty: 1}}},
		{"a donor poorer than the recipient still gives 1", []int64{3, 1, 1}, w(0), nil,
			[]Move{{From: 1, To: 0, Qty: 1}}},
		{"each donor gives once a pass, fullest first", []int64{0, 0, 50, 40, 50, 10}, w(0, 1), nil,
			[]Move{{From: 2, To: 0, Qty: 25}, {From: 4, To: 1, Qty: 25}}},
		{"more recipients than donors: the emptiest wanting first", []int64{2, 0, 1, 10}, w(0, 1, 2), nil,
			[]Move{{From: 3, To: 1, Qty: 5}}},
		{"a recipient never gives", []int64{0, 30, 10}, w(0, 1), nil,
			[]Move{{From: 2, To: 0, Qty: 5}}},
		{"no stock key: neither gives nor gets", []int64{-1, 0, 10, -1}, w(0, 1, 3), nil,
			[]Move{{From: 2, To: 1, Qty: 5}}},
		{"drained below a quarter of the mean since last pass", []int64{9, 50, 50, 50}, w(), []int64{30, 50, 50, 50},
			[]Move{{From: 1, To: 0, Qty: 21}}},
		{"at a quarter of the mean is not below it", []int64{10, 50, 50, 50}, w(), []int64{30, 50, 50, 50}, nil},
		{"low but not dropping: its buyers stopped", []int64{5, 50, 50, 50}, w(), []int64{5, 50, 50, 50}, nil},
		{"low, first pass: no drop known", []int64{5, 50, 50, 50}, w(), nil, nil},
		{"prev of another bucket count is ignored", []int64{5, 50, 50, 50}, w(), []int64{9, 50}, nil},
		{"wanting before draining", []int64{1, 0, 60, 20}, w(1), []int64{20, 0, 60, 20},
			[]Move{{From: 2, To: 1, Qty: 30}, {From: 3, To: 0, Qty: 10}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Plan(tc.stocks, tc.want[:len(tc.stocks)], nil, tc.prev)
			if !reflect.DeepEqual(got, tc.moves) {
				t.Fatalf("Plan(%v, want %v, prev %v) = %+v; want %+v", tc.stocks, tc.want[:len(tc.stocks)], tc.prev, got, tc.moves)
			}
			var before, later int64
			for _, s := range tc.stocks {
				before += max(s, 0)
			}
			for _, s := range after(tc.stocks, got) {
				if s < -1 {
					t.Fatalf("a move overdraws: %v", after(tc.stocks, got))
				}
				later += max(s, 0)
			}
			if before != later {
				t.Fatalf("moves change the total: %d -> %d", before, later)
			}
		})
	}
}

// A donor's own giving is not a drop: with prev as the pass left it, units
// do not move back without buyers.
func TestPlanNoPingPong(t *testing.T) {
	t.Parallel()
	stocks := []int64{0, 50, 50, 50}
	want := []bool{true, false, false, false}
	var prev []int64
	for pass := range 10 {
		moves := Plan(stocks, want, nil, prev)
		if pass > 0 && len(moves) > 0 {
			t.Fatalf("pass %d without buyers moved %+v (stocks %v)", pass+1, moves, stocks)
		}
		stocks = after(stocks, moves)
		prev = stocks
		want = make([]bool, 4) // the transfer in cleared the flag
	}
	if !reflect.DeepEqual(stocks, []int64{25, 25, 50, 50}) {
		t.Fatalf("stocks = %v", stocks)
	}
}

// Buyers only in a quarter of the buckets buy everything: a simulated sale
// where each pass admits up to a few buyers per bucket, refused buyers raise
// want flags, and Plan's moves are applied whole.
func TestPlanSellsEverythingToSkewedDemand(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		const n, total = 8, 400
		stocks := make([]int64, n)
		for b := range stocks {
			stocks[b] = total / n
		}
		var prev []int64
		sold := int64(0)
		passes := 0
		for ; sold < total; passes++ {
			if passes > 1000 {
				t.Fatalf("seed %d: %d of %d sold after %d passes; stocks %v", seed, sold, total, passes, stocks)
			}
			want := make([]bool, n)
			for _, b := range []int{0, 1} { // every buyer's home is bucket 0 or 1
				for range 1 + rng.IntN(6) {
					if stocks[b] > 0 {
						stocks[b]--
						sold++
					} else {
						want[b] = true
					}
				}
			}
			moves := Plan(stocks, want, nil, prev)
			stocks = after(stocks, moves)
			prev = stocks
			for _, s := range stocks {
				if s < 0 {
					t.Fatalf("seed %d: negative stock %v", seed, stocks)
				}
			}
		}
		if sold != total {
			t.Fatalf("seed %d: sold %d of %d", seed, sold, total)
		}
		t.Logf("seed %d: sold out in %d passes", seed, passes)
	}
}

// A buyer of 20 finds their bucket (0) at 5 of an item spread 5 to a
// bucket: one pass gathers the 15 they lack from several donors, where one
// donor per pass gave a unit a pass (half the difference of equal buckets).
func TestPlanGathersAWantedQty(t *testing.T) {
	stocks := []int64{5, 5, 5, 5, 5, 5, 5, 5}
	want := []bool{true, false, false, false, false, false, false, false}
	need := []int64{20, 0, 0, 0, 0, 0, 0, 0}
	got := after(stocks, Plan(stocks, want, need, nil))
	if got[0] < 20 {
		t.Fatalf("after one pass bucket 0 holds %d (moves %v); want the 20 its buyer asked for", got[0], Plan(stocks, want, need, nil))
	}
	var sum int64
	for _, s := range got {
		if s < 0 {
			t.Fatalf("a donor went negative: %v", got)
		}
		sum += s
	}
	if sum != 40 {
		t.Fatalf("moves changed the total: %v", got)
	}
	// Without the need (a want of 1) one donor gives one unit, as before.
	if moves := Plan(stocks, want, nil, nil); len(moves) != 1 || moves[0].Qty != 1 {
		t.Fatalf("Plan without a need: %v", moves)
	}
}

// Every bucket holding stock also wants more than it has (a wanting bucket
// was never a donor): two qty-2 buyers homed on buckets of 1 unit each and
// a qty-1 buyer on the empty one. Two units remain, so a move must let one
// of them buy; the policy planned nothing, and every buyer waited and got
// 503 stock_moving while the refusals kept the flags up.
func TestPlanNoLivelockWhenEveryHolderWants(t *testing.T) {
	stocks := []int64{1, 1, 0}
	want := []bool{true, true, true}
	need := []int64{2, 2, 1}
	moves := Plan(stocks, want, need, nil)
	if !someServable(after(stocks, moves), want, need) {
		t.Fatalf("Plan(%v, wants %v, needs %v) = %v: no wanting bucket can sell after the pass", stocks, want, need, moves)
	}
}

// someServable reports whether a wanting bucket holds what its buyer asked.
func someServable(stocks []int64, want []bool, need []int64) bool {
	for b, w := range want {
		if w && stocks[b] >= max(need[b], 1) {
			return true
		}
	}
	return false
}

// TestPlanAlwaysServesSomeCoverableBuyer is the policy's progress property,
// over random items: whenever the buckets together hold at least what some
// wanting bucket's buyer asked for, one pass leaves a wanting bucket able to
// sell to its buyer, moves only what donors have and keeps the total. So a
// want that the stock can cover is never left waiting on the policy. 20,000
// random cases (1-8 buckets, 0-6 units each, needs 1-3), fixed seed.
func TestPlanAlwaysServesSomeCoverableBuyer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(22, 2))
	for i := 0; i < 20000; i++ {
		n := 1 + rng.IntN(8)
		stocks, want, need := make([]int64, n), make([]bool, n), make([]int64, n)
		var sum int64
		for b := range n {
			stocks[b] = int64(rng.IntN(7))
			sum += stocks[b]
			want[b] = rng.IntN(2) == 0
			need[b] = int64(1 + rng.IntN(3))
		}
		coverable := false
		for b := range n {
			if want[b] && need[b] <= sum {
				coverable = true
			}
		}
		moves := Plan(stocks, want, need, nil)
		got := after(stocks, moves)
		var total int64
		for b, s := range got {
			if s < 0 {
				t.Fatalf("case %d: %v wants %v needs %v: moves %v leave bucket %d at %d", i, stocks, want, need, moves, b, s)
			}
			total += s
		}
		if total != sum {
			t.Fatalf("case %d: moves %v changed the total %d to %d", i, moves, sum, total)
		}
		if coverable && !someServable(got, want, need) {
			t.Fatalf("case %d: Plan(%v, wants %v, needs %v) = %v: a coverable buyer waits", i, stocks, want, need, moves)
		}
	}
}
