package main

import "time"

// Phases are an attack's rates per phase of the sale instead of over the
// whole attack: a sale is two workloads one after the other (orders while
// stock lasts, then sold-out answers), and a rate over both says how fast
// neither is. The order phase runs from the attack's start to the last 202;
// the sold-out phase from the last 202 (or the start, when nothing was
// accepted) to the last answer, counting the 410s answered in it. These are
// the figures the floors are compared with (floor.go).
type Phases struct {
	Accepted       int     `json:"accepted"`
	OrderSecs      float64 `json:"order_seconds"`
	AcceptedPerSec float64 `json:"accepted_per_sec"`
	SoldOut        int     `json:"sold_out"`
	SoldOutSecs    float64 `json:"sold_out_seconds"`
	SoldOutPerSec  float64 `json:"sold_out_per_sec"`
}

// phaseRates computes the Phases of answers to an attack that started at
// start.
func phaseRates(start time.Time, answers []Result) Phases {
	var p Phases
	lastAccept, last := start, start
	for _, a := range answers {
		if a.Outcome == OutAccepted {
			p.Accepted++
			if a.End.After(lastAccept) {
				lastAccept = a.End
			}
		}
		if a.End.After(last) {
			last = a.End
		}
	}
	for _, a := range answers {
		if a.Outcome == OutSoldOut && a.End.After(lastAccept) {
			p.SoldOut++
		}
	}
	p.OrderSecs = lastAccept.Sub(start).Seconds()
	p.SoldOutSecs = last.Sub(lastAccept).Seconds()
	if p.OrderSecs > 0 {
		p.AcceptedPerSec = float64(p.Accepted) / p.OrderSecs
	}
	if p.SoldOutSecs > 0 {
		p.SoldOutPerSec = float64(p.SoldOut) / p.SoldOutSecs
	}
	return p
}

// Phases returns the recording's rates per phase (phaseRates).
func (r *Recorder) Phases() Phases {
	r.mu.Lock()
	defer r.mu.Unlock()
	answered := make([]Result, 0, len(r.answers))
	for i, ok := range r.answered {
		if ok {
			answered = append(answered, r.answers[i])
		}
	}
	return phaseRates(r.start, answered)
}
