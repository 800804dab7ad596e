package main

import (
	"math"
	"testing"
	"time"
)

func answerAt(start time.Time, ms int, outcome string) Result {
	return Result{Attempt: -1, Outcome: outcome, End: start.Add(time.Duration(ms) * time.Millisecond)}
}

// TestPhaseRatesSplitsAtTheLast202: 202s count over the time to the last
// 202, 410s answered after it over the time from it to the last answer;
// 410s before the last 202 and other answers count in neither rate.
func TestPhaseRatesSplitsAtTheLast202(t *testing.T) {
	s := time.Unix(1_700_000_000, 0)
	answers := []Result{
		answerAt(s, 100, OutAccepted), answerAt(s, 200, OutAccepted), answerAt(s, 300, OutSoldOut), // a 410 inside the order phase
		answerAt(s, 400, OutAccepted), answerAt(s, 500, OutAccepted), // last 202 at 0.5 s
		answerAt(s, 600, OutSoldOut), answerAt(s, 700, OutAlready), answerAt(s, 900, OutSoldOut), answerAt(s, 1500, OutSoldOut), // last answer at 1.5 s
	}
	p := phaseRates(s, answers)
	want := Phases{Accepted: 4, OrderSecs: 0.5, AcceptedPerSec: 8, SoldOut: 3, SoldOutSecs: 1, SoldOutPerSec: 3}
	if !near(p, want) {
		t.Errorf("got %+v, want %+v", p, want)
	}
}

// TestPhaseRatesWithoutAccepts: with no 202 (the HTTP floor, a sale that
// was sold out before it began) the sold-out phase is the whole attack.
func TestPhaseRatesWithoutAccepts(t *testing.T) {
	s := time.Unix(1_700_000_000, 0)
	p := phaseRates(s, []Result{answerAt(s, 250, OutSoldOut), answerAt(s, 500, OutSoldOut), answerAt(s, 400, OutUnavail)})
	want := Phases{SoldOut: 2, SoldOutSecs: 0.5, SoldOutPerSec: 4}
	if !near(p, want) {
		t.Errorf("got %+v, want %+v", p, want)
	}
}

// TestPhaseRatesWithoutSoldOut: a stock that outlasts the buyers has no
// sold-out phase: zero 410s, zero rate, not a division by zero.
func TestPhaseRatesWithoutSoldOut(t *testing.T) {
	s := time.Unix(1_700_000_000, 0)
	p := phaseRates(s, []Result{answerAt(s, 200, OutAccepted), answerAt(s, 100, OutAccepted)})
	want := Phases{Accepted: 2, OrderSecs: 0.2, AcceptedPerSec: 10}
	if !near(p, want) {
		t.Errorf("got %+v, want %+v", p, want)
	}
	if z := phaseRates(s, nil); z != (Phases{}) {
		t.Errorf("no answers: %+v", z)
	}
}

func near(a, b Phases) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return a.Accepted == b.Accepted && a.SoldOut == b.SoldOut && eq(a.OrderSecs, b.OrderSecs) && eq(a.AcceptedPerSec, b.AcceptedPerSec) &&
		eq(a.SoldOutSecs, b.SoldOutSecs) && eq(a.SoldOutPerSec, b.SoldOutPerSec)
}
