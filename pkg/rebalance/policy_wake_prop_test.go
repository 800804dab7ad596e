package rebalance

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPropPolicyServesSmallBuyerUnderTooBigStream is the liveness property
// of TestPropPolicyServesEveryCoverableBuyer at the end of a sale with
// quantities: buyers answered 410 (they asked more than the buckets hold)
// do not leave quietly, new such buyers keep coming to the same buckets
// every pass, each raising its bucket's want flag to its qty (admit.lua's
// SET). Without more, rapid finds stocks [0 1], needs [2 2] and a buyer of
// 1 homed on bucket 0 whose flag a buyer of 2 overwrites before every
// pass: the policy is asked for 2 units of an item holding 1 and never
// moves the unit (the buyer got 503 stock_moving while it remained; 1 run
// in 2 of 2,000 cases). What serves them is the ingress's wake
// (pkg/admission/wake.go): every waiting buyer brings its home bucket's
// flag down to its own qty before the pass it wakes. With that step every
// buyer the stock covers is served within one pass per buyer plus one,
// whatever the stream.
func TestPropPolicyServesSmallBuyerUnderTooBigStream(t *testing.T) {
	t.Parallel()
	policyChecks(t, func(t *rapid.T) {
		s, waiting := drawSale(t)
		var refused []waitingBuyer
		// retry lets the waiting buyers and the stream of too-big ones try
		// again in an order of rapid's choosing: one served leaves; one
		// refused raises its bucket's flag to its qty (admit.lua), and is
		// answered 410 when it asks more than the buckets hold, to be
		// replaced by another such buyer next pass. Then every buyer still
		// waiting wakes the rebalancer, first lowering its home bucket's
		// flag to its qty (want_lower.lua, from wake.go).
		retry := func(round int) {
			order := rapid.Permutation(slices.Concat(waiting, refused)).Draw(t, fmt.Sprintf("order%d", round))
			waiting, refused = waiting[:0], refused[:0]
			for _, b := range order {
				if s.try(b) {
					continue
				}
				if b.qty <= s.total() {
					waiting = append(waiting, b)
					continue
				}
				refused = append(refused, b)
			}
			for _, b := range waiting {
				if s.stocks[b.home] >= 0 && (!s.want[b.home] || s.need[b.home] > b.qty) {
					s.want[b.home], s.need[b.home] = true, b.qty
				}
			}
		}
		s.runPasses(t, len(waiting)+1, retry)
		s.expectNoneCoverable(t, waiting)
	})
}
