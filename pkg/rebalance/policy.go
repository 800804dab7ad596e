package rebalance

import "slices"

// Move is one transfer the policy asks for: Qty units from bucket From to
// bucket To.
type Move struct {
	From, To int
	Qty      int64
}

// Plan decides one item's moves for this pass from its buckets' Redis
// stocks (-1: no stock key, left alone), their want flags, and prev, the
// stocks the previous pass expected to leave behind (nil on the first
// pass, or when the bucket count changed).
//
// Recipients are the buckets whose want flag is set (a buyer found the
// bucket short within the flag's TTL), and, proactively, the buckets below
// a quarter of the item's mean bucket stock whose stock dropped since the
// previous pass (buyers are draining them now, so they will want soon). Each
// recipient, those with the flag first and then the emptiest, gets from the
// fullest bucket that is neither a recipient nor already a donor this pass
// half the difference between them, rounded up, and at least 1 unit when
// the donor has any.
//
// Why this converges and never strands stock:
//   - Units move only toward demand: into a bucket where a buyer was just
//     refused, or that its own buyers are emptying. A bucket whose buyers
//     stopped coming is never a recipient, so it keeps its stock only until
//     a bucket with buyers wants it, and then gives from the fullest first.
//   - A donor keeps at least what the recipient had (d - ceil((d-r)/2) >= r
//     when d >= r), so one move never turns the order of the two round, and
//     prev is what the moves left, so a donor's own giving never makes it
//     look "drained" next pass: units do not ping-pong without buyers.
//   - While any bucket has a unit, a buyer refused anywhere raises a want
//     flag and a pass moves at least one unit there (each pass serves as
//     many recipients as there are donors, the wanting first): the fullest
//     bucket holds at least the mean, so it is never a proactive recipient,
//     and gives unless it wants itself (then it has buyers and is selling).
//     Every unit thus
//     ends sold or in a bucket nobody asks of, and "sold out" is answered
//     only when the buckets together hold less than the buyer asked for.
//   - When every bucket holding stock wants more than it has (so none is a
//     donor) and the pass would let no wanting buyer buy, the pass instead
//     fills the wanting bucket with the smallest shortfall the item covers,
//     then the next while what is left covers one (consolidate): some buyer
//     is served in every such pass, never none, and as many as the stock
//     and the donors (each gives once a pass) allow.
//   - Every move is a transfer, exactly once in both stores (transfer.go),
//     so the policy can be wrong about timing, never about the count.
//
// need is the qty the buyer who raised each want flag asked for (nil or 0:
// 1). A wanting recipient whose stock is short of its need takes, in the
// same pass, as much of the need as each donor has, from as many donors as
// it takes: a buyer of 43 units of an item spread 6 to a bucket would
// otherwise wait one pass per unit (half the difference of two equal
// buckets is one unit), far longer than the ingress's bucket wait.
//
// Plan is the policy's one entry point: the rebalancer's passes, the
// property tests and the model test all plan through it.
func Plan(stocks []int64, want []bool, need []int64, prev []int64) []Move {
	moves := planToward(stocks, want, need, prev)
	if c := consolidate(stocks, want, need, after(stocks, moves)); c != nil {
		return c
	}
	return moves
}

// needOf is the qty bucket b's wanting buyer asked for (at least 1).
func needOf(need []int64, b int) int64 {
	if b < len(need) && need[b] > 1 {
		return need[b]
	}
	return 1
}

// consolidate is the policy's answer when the ordinary pass (planned, the
// stocks it leaves) lets no wanting bucket sell although the item could
// cover one: every bucket holding stock wants more than it has, so none is
// a donor (stocks [1,1,0], needs [2,2,1] planned nothing, and each refusal
// renewed the flags: a livelock while units remained). It then fills the
// wanting bucket with the smallest shortfall that the item's stock covers,
// from the fullest other buckets, wanting ones included, and then the next
// such bucket from what is left, as long as the stock covers one: in a
// burst on many buckets every holder soon wants, and filling one bucket a
// pass left buyers in the others waiting out the bucket wait on a loaded
// host (155 of 300 answers 503 stock_moving on 64 buckets). Every donor
// gives once a pass (the moves run in parallel, moves.go), and a bucket
// filled this pass never gives. nil when the ordinary pass already serves a
// wanting bucket, or none can be covered.
func consolidate(stocks []int64, want []bool, need []int64, planned []int64) []Move {
	for b, s := range stocks {
		if s >= 0 && b < len(want) && want[b] && planned[b] >= needOf(need, b) {
			return nil // the ordinary pass serves this bucket's buyer
		}
	}
	left := slices.Clone(stocks)
	filled := make([]bool, len(stocks)) // a target this pass
	gave := make([]bool, len(stocks))
	var moves []Move
	for {
		// What a target could still gather: every bucket that may give.
		var free int64
		for b, s := range left {
			if s > 0 && !filled[b] && !gave[b] {
				free += s
			}
		}
		target, shortfall := -1, int64(0)
		for b, s := range left {
			if s < 0 || filled[b] || gave[b] || b >= len(want) || !want[b] {
				continue
			}
			nd := needOf(need, b)
			// The smallest shortfall first, and of those the smallest
			// need: it leaves the most units and donors to the others.
			if nd <= free && (target < 0 || nd-s < shortfall || nd-s == shortfall && nd < needOf(need, target)) {
				target, shortfall = b, nd-s
			}
		}
		if target < 0 {
			return moves
		}
		filled[target] = true
		for shortfall > 0 {
			from := -1
			for b, s := range left {
				if !filled[b] && !gave[b] && s > 0 && (from < 0 || s > left[from]) {
					from = b
				}
			}
			if from < 0 {
				break // not reached: the others hold free - left[target] >= shortfall
			}
			qty := min(shortfall, left[from])
			left[from] -= qty
			left[target] += qty
			gave[from] = true
			shortfall -= qty
			moves = append(moves, Move{From: from, To: target, Qty: qty})
		}
	}
}

// planToward is the ordinary pass of Plan: recipients, wanting first,
// each given from the fullest non-recipient donors.
func planToward(stocks []int64, want []bool, need []int64, prev []int64) []Move {
	n := len(stocks)
	var sum, known int64
	for _, s := range stocks {
		if s >= 0 {
			sum, known = sum+s, known+1
		}
	}
	if sum == 0 {
		return nil
	}
	recipient := make([]bool, n)
	var recipients []int
	for b, s := range stocks {
		if s < 0 {
			continue
		}
		wants := b < len(want) && want[b]
		// s < mean/4, in integers: 4*s*known < sum.
		drained := len(prev) == n && prev[b] >= 0 && s < prev[b] && 4*s*known < sum
		if wants || drained {
			recipient[b] = true
			recipients = append(recipients, b)
		}
	}
	wants := func(b int) bool { return b < len(want) && want[b] }
	slices.SortStableFunc(recipients, func(a, b int) int {
		switch {
		case wants(a) != wants(b):
			if wants(a) {
				return -1
			}
			return 1
		case stocks[a] != stocks[b]:
			if stocks[a] < stocks[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	gave := make([]bool, n)
	var moves []Move
	for _, to := range recipients {
		r := stocks[to]
		short := int64(0) // what the recipient's buyer still lacks
		if wants(to) && to < len(need) {
			short = need[to] - r
		}
		for first := true; first || short > 0; first = false {
			from := -1
			for b, s := range stocks {
				if s > 0 && !recipient[b] && !gave[b] && (from < 0 || s > stocks[from]) {
					from = b
				}
			}
			if from < 0 {
				break
			}
			d := stocks[from]
			qty := int64(1)
			if d > r {
				qty = max((d-r+1)/2, 1)
			}
			if short > qty {
				qty = min(short, d)
			}
			gave[from] = true
			moves = append(moves, Move{From: from, To: to, Qty: qty})
			r, short = r+qty, short-qty
		}
	}
	return moves
}

// after returns stocks with moves applied: what a pass expects to leave.
func after(stocks []int64, moves []Move) []int64 {
	out := slices.Clone(stocks)
	for _, m := range moves {
		out[m.From] -= m.Qty
		out[m.To] += m.Qty
	}
	return out
}
