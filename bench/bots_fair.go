package main

import "math"

// fairUpperBound is the most units a fair draw gives the bots except with
// probability at most p: when n winners are drawn uniformly without
// replacement from total tickets of which bots hold botTickets, the bots'
// wins X are hypergeometric, and this is the smallest k with P(X > k) <= p.
//
// It is the slack of a small run's fairness check: the queue's shuffle
// orders the tickets taken before the start uniformly, so with 60 units the
// bots' share of the wins scatters by a few units around their share of the
// tickets, and a bound at a small p fails a fair sale that rarely while
// first come first served (the bots win most units) stays far above it.
func fairUpperBound(total, botTickets, n int, p float64) int {
	if total <= 0 || botTickets <= 0 || n <= 0 {
		return 0
	}
	botTickets, n = min(botTickets, total), min(n, total)
	lo, hi := max(0, n-(total-botTickets)), min(n, botTickets)
	// P(X = k) = C(K,k) C(N-K,n-k) / C(N,n), summed from the top down
	// until the tail passes p.
	tail := 0.0
	for k := hi; k >= lo; k-- {
		pk := math.Exp(lchoose(botTickets, k) + lchoose(total-botTickets, n-k) - lchoose(total, n))
		if tail+pk > p {
			return k
		}
		tail += pk
	}
	return lo
}

// lchoose is ln C(n, k).
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
