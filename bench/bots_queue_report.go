package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// QueueStats is what a queue-mode run adds to its BotsReport.
type QueueStats struct {
	Rate int `json:"queue_rate"`
	// HumanTickets and BotTickets count the accounts that got a ticket;
	// the Early ones took it in the first round (before starts_at and,
	// with a shuffle window, in its first slice after it: the tickets
	// drawn together; later ones stand behind them).
	HumanTickets      int `json:"human_tickets"`
	BotTickets        int `json:"bot_tickets"`
	EarlyHumanTickets int `json:"early_human_tickets"`
	EarlyBotTickets   int `json:"early_bot_tickets"`
	// BotsShareOfTickets is the bots' part of the tickets and
	// BotsUnitsOverTickets their share of the units over it (the issue's
	// goal: at most 1.2); the Early pair compares with the first round's
	// tickets alone, which is what the draw makes fair.
	BotsShareOfTickets        float64 `json:"bots_share_of_tickets"`
	BotsUnitsOverTickets      float64 `json:"bots_units_over_tickets"`
	BotsShareOfEarlyTickets   float64 `json:"bots_share_of_early_tickets"`
	BotsUnitsOverEarlyTickets float64 `json:"bots_units_over_early_tickets"`
	// FairBotUnits is the most units a uniform draw of the winners from
	// the shuffled tickets gives the bots but with probability 1e-4
	// (fairUpperBound).
	FairBotUnits int            `json:"fair_bot_units_bound"`
	Estimate     EstimateStats  `json:"estimate"`
	SellOut      SellOutStats   `json:"sell_out"`
	Polls        int            `json:"polls"`
	PollAnswers  map[string]int `json:"poll_answers,omitempty"`
	// TicketAnswers counts every answer to POST .../queue.
	TicketAnswers map[string]int `json:"ticket_answers"`
	// Skips and Copied count the bots' orders without a grant and with
	// another bot's by answer; BypassWins those that got a 202.
	Skips      map[string]int `json:"bot_skips"`
	Copied     map[string]int `json:"bot_copied_grants"`
	BypassWins int            `json:"bypass_wins"`
	// Refusals counts every 403 to an order, by error code.
	Refusals map[string]int `json:"refusals_403"`
	// Resale is set for a run with -bots-unpaid (bots_queue_resale.go).
	Resale *ResaleStats `json:"resale,omitempty"`
}

// EstimateStats is the wait estimate's error: for each ticket admitted
// after waiting, the estimated_wait_ms of its first poll answered from the
// start on against the time from that answer to the one that admitted it.
type EstimateStats struct {
	Tickets int `json:"tickets"`
	// AdmittedAtOnce were admitted by their first poll from the start on
	// (nothing left to estimate); NeverAdmitted had an estimate and saw
	// the sell-out instead.
	AdmittedAtOnce int `json:"admitted_at_once"`
	NeverAdmitted  int `json:"never_admitted"`
	// Waited counts the tickets whose first answer with a place in line
	// was "waiting"; WithoutEstimate those of them that answer gave no
	// estimate. What the product promises a waiting buyer does not depend
	// on the machine's load, where Tickets does: on a loaded machine every
	// admitted ticket may have been admitted by its first placed answer.
	Waited          int `json:"waited"`
	WithoutEstimate int `json:"waited_without_estimate"`
	// P50 and P90 are |estimate - actual| / actual; AbsP50MS and AbsP90MS
	// the same error in milliseconds.
	P50      float64 `json:"error_p50"`
	P90      float64 `json:"error_p90"`
	AbsP50MS float64 `json:"error_abs_p50_ms"`
	AbsP90MS float64 `json:"error_abs_p90_ms"`
	// First is the same error over the tickets whose estimate was given
	// before estimatePhase had passed since the first draw (every page of
	// the round asking at once, the first admissions seen late), After
	// over the later ones: the two behave apart, and a mix of them says
	// little about either.
	First EstimatePhase `json:"first_10s"`
	After EstimatePhase `json:"after_10s"`
	// Moment is the error of the same estimates given as a moment
	// (estimated_admission_at, by the bench's clock once the server's
	// offset is taken out) against the admission's arrival, over the same
	// actual waits: what a page counting down to the moment shows. The
	// wait as received (P50, P90) is long by the answer's delivery, which
	// the moment is not (at a round's close every page asks at once).
	Moment EstimatePhase `json:"moment"`
}

// EstimatePhase is the estimate's error over the tickets of one phase.
type EstimatePhase struct {
	Tickets  int     `json:"tickets"`
	P50      float64 `json:"error_p50"`
	P90      float64 `json:"error_p90"`
	AbsP50MS float64 `json:"error_abs_p50_ms"`
	AbsP90MS float64 `json:"error_abs_p90_ms"`
}

// estimatePhase is how long after the first draw an estimate counts in
// EstimateStats.First: the refresh at the draw and the first admissions
// (issue 41 item 3's "the first 10 s").
const estimatePhase = 10 * time.Second

// SellOutStats is the waiting after the sell-out: from the moment the item
// sold out (the last unit's 202, or the first sold-out anyone saw if
// earlier) to each waiting ticket's first sight of it.
type SellOutStats struct {
	SoldOut bool `json:"sold_out"`
	// AtMS is the sell-out after the start.
	AtMS float64 `json:"at_ms"`
	// Waiting held a ticket, not admitted, at the sell-out; NotTold of
	// them never saw it before the run ended.
	Waiting int     `json:"waiting"`
	NotTold int     `json:"not_told"`
	P99MS   float64 `json:"wasted_p99_ms"`
	MaxMS   float64 `json:"wasted_max_ms"`
}

// estimateErrors reduces the tickets' estimates (EstimateStats). drawAt
// is the item's first draw by the bench's clock (starts_at plus the
// shuffle window's first round: the first positions, and the first
// admissions, come then); the phases are counted from it. offset is how
// far the server's clock is ahead of the bench's (the estimated moments
// are the server's).
func estimateErrors(runs []ticketRun, drawAt time.Time, offset time.Duration) EstimateStats {
	var st EstimateStats
	var all, first, after, moment phaseErrors
	for _, r := range runs {
		if r.SawStart && r.FirstState == ticketWaiting {
			st.Waited++
			if !r.HasEst {
				st.WithoutEstimate++
			}
		}
		switch {
		case r.SawStart && r.FirstState == ticketAdmitted:
			st.AdmittedAtOnce++
		case r.HasEst && r.AdmittedAt.IsZero():
			st.NeverAdmitted++
		case r.HasEst && r.AdmittedAt.After(r.EstAt):
			actual := r.AdmittedAt.Sub(r.EstAt)
			miss := (time.Duration(r.EstMS)*time.Millisecond - actual).Abs()
			all.add(miss, actual)
			if !r.EstMoment.IsZero() {
				moment.add(r.EstMoment.Add(-offset).Sub(r.AdmittedAt).Abs(), actual)
			}
			if r.EstAt.Before(drawAt.Add(estimatePhase)) {
				first.add(miss, actual)
			} else {
				after.add(miss, actual)
			}
		}
	}
	p := all.reduce()
	st.Tickets, st.P50, st.P90, st.AbsP50MS, st.AbsP90MS = p.Tickets, p.P50, p.P90, p.AbsP50MS, p.AbsP90MS
	st.First, st.After, st.Moment = first.reduce(), after.reduce(), moment.reduce()
	return st
}

// phaseErrors gathers the estimates' misses of one phase.
type phaseErrors struct {
	rel []float64
	abs []time.Duration
}

func (p *phaseErrors) add(miss, actual time.Duration) {
	p.rel = append(p.rel, float64(miss)/float64(actual))
	p.abs = append(p.abs, miss)
}

func (p *phaseErrors) reduce() EstimatePhase {
	slices.Sort(p.rel)
	slices.Sort(p.abs)
	return EstimatePhase{Tickets: len(p.rel), P50: quantile(p.rel, .5), P90: quantile(p.rel, .9),
		AbsP50MS: ms(quantile(p.abs, .5)), AbsP90MS: ms(quantile(p.abs, .9))}
}

// sellOutMoment is when the item sold out as the buyers can tell: the last
// unit's 202 if every unit was won, or the first sold-out anyone saw if
// that was earlier; false if it did not sell out.
func sellOutMoment(runs []ticketRun, units int) (time.Time, bool) {
	var at, last time.Time
	won := 0
	for _, r := range runs {
		if r.Won {
			won++
			if r.WonAt.After(last) {
				last = r.WonAt
			}
		}
		if !r.SoldOutAt.IsZero() && (at.IsZero() || r.SoldOutAt.Before(at)) {
			at = r.SoldOutAt
		}
	}
	if won >= units && won > 0 && (at.IsZero() || last.Before(at)) {
		at = last
	}
	return at, !at.IsZero()
}

// wastedAfterSellOut measures, for every ticket waiting at the sell-out,
// how long it took to see it (SellOutStats).
func wastedAfterSellOut(runs []ticketRun, units int, start time.Time) SellOutStats {
	at, ok := sellOutMoment(runs, units)
	if !ok {
		return SellOutStats{}
	}
	st := SellOutStats{SoldOut: true, AtMS: ms(at.Sub(start))}
	var wasted []time.Duration
	for _, r := range runs {
		if r.Ticket == "" || !r.TicketAt.Before(at) || (!r.AdmittedAt.IsZero() && !r.AdmittedAt.After(at)) {
			continue // no ticket then, or already told to buy
		}
		st.Waiting++
		if r.SoldOutAt.IsZero() {
			st.NotTold++
			continue
		}
		wasted = append(wasted, r.SoldOutAt.Sub(at))
	}
	slices.Sort(wasted)
	st.P99MS = ms(quantile(wasted, .99))
	if n := len(wasted); n > 0 {
		st.MaxMS = ms(wasted[n-1])
	}
	return st
}

// summarizeQueue counts a queue-mode run: the orders as summarizeBots does,
// then the tickets, the estimate, the sell-out and the skips. drawAt is
// when the item's first round closed (the server's clock, as taken_at: its
// starts_at plus the shuffle window's first round), so the tickets taken
// before it are the first round's, drawn together; drawLocal is the same
// moment by the bench's clock (the estimate's phases count from it); start
// is the sale's start by the bench's clock.
func summarizeQueue(runs []ticketRun, humans int, start, drawAt, drawLocal time.Time, units, rate int) BotsReport {
	orders := make([]buyerRun, len(runs))
	for i, r := range runs {
		orders[i] = r.buyerRun
	}
	rep := summarizeBots(orders, humans, start, units)
	q := &QueueStats{Rate: rate, TicketAnswers: map[string]int{}, PollAnswers: map[string]int{}, Skips: map[string]int{}, Copied: map[string]int{}, Refusals: map[string]int{}}
	for i, r := range runs {
		human := i < humans
		if r.Ticket != "" {
			early := r.TakenAt.Before(drawAt)
			switch {
			case human && early:
				q.HumanTickets++
				q.EarlyHumanTickets++
			case human:
				q.HumanTickets++
			case early:
				q.BotTickets++
				q.EarlyBotTickets++
			default:
				q.BotTickets++
			}
		}
		q.Polls += r.Polls
		q.BypassWins += r.BypassWins
		for _, m := range []struct{ from, to map[string]int }{{r.TicketAnswers, q.TicketAnswers}, {r.PollAnswers, q.PollAnswers}, {r.Skips, q.Skips}, {r.Copied, q.Copied}} {
			for k, v := range m.from {
				m.to[k] += v
			}
		}
		for _, m := range []map[string]int{r.Outcomes, r.Skips, r.Copied, r.Claim.Outcomes} {
			for k, v := range m {
				if code, ok := strings.CutPrefix(k, "403 "); ok {
					q.Refusals[code] += v
				}
			}
		}
	}
	if t := q.HumanTickets + q.BotTickets; t > 0 {
		q.BotsShareOfTickets = float64(q.BotTickets) / float64(t)
	}
	if t := q.EarlyHumanTickets + q.EarlyBotTickets; t > 0 {
		q.BotsShareOfEarlyTickets = float64(q.EarlyBotTickets) / float64(t)
		q.FairBotUnits = fairUpperBound(t, q.EarlyBotTickets, rep.Humans.Won+rep.Bots.Won, 1e-4)
	}
	if q.BotsShareOfTickets > 0 {
		q.BotsUnitsOverTickets = rep.BotsShareOfUnits / q.BotsShareOfTickets
	}
	if q.BotsShareOfEarlyTickets > 0 {
		q.BotsUnitsOverEarlyTickets = rep.BotsShareOfUnits / q.BotsShareOfEarlyTickets
	}
	q.Estimate = estimateErrors(runs, drawLocal, drawAt.Sub(drawLocal))
	q.SellOut = wastedAfterSellOut(runs, units, start)
	rep.Queue = q
	return rep
}

// admissionStats is the round trip of the run's 202s.
func admissionStats(runs []buyerRun) OutcomeStats {
	var lat []time.Duration
	for _, r := range runs {
		if r.Won {
			lat = append(lat, r.WinLatency)
		}
	}
	return summarize(OutAccepted, lat, 0)
}

// queueChecks are the gate's promises as the bots test them: no order won
// without its own grant, a grant-less order refused as admission_required,
// another buyer's grant as admission_invalid, and the own grant never
// refused but for its age.
func queueChecks(q *QueueStats, own map[string]int) []string {
	var c []string
	if q.BypassWins > 0 {
		c = append(c, fmt.Sprintf("gate: %d orders won without their own admission grant", q.BypassWins))
	}
	for _, want := range []struct {
		what   string
		counts map[string]int
		code   string
	}{{"an order without a grant", q.Skips, "admission_required"}, {"an order with another buyer's grant", q.Copied, "admission_invalid"}, {"an order with its own grant", own, "admission_expired"}} {
		for _, k := range slices.Sorted(maps.Keys(want.counts)) {
			if code, ok := strings.CutPrefix(k, "403 "); ok && code != want.code {
				c = append(c, fmt.Sprintf("gate: %s refused %d times as %s, not %s", want.what, want.counts[k], code, want.code))
			}
		}
	}
	return c
}

// writeQueue prints a queue run's own lines.
func writeQueue(w io.Writer, rep BotsReport) {
	q := rep.Queue
	fmt.Fprintf(w, "  tickets: %d humans (%d before the start), %d bots (%d before it); answers %v; %d polls %v\n",
		q.HumanTickets, q.EarlyHumanTickets, q.BotTickets, q.EarlyBotTickets, q.TicketAnswers, q.Polls, q.PollAnswers)
	fmt.Fprintf(w, "  bots' share: %.1f%% of the tickets, %.1f%% of the units won: %.2fx (goal <= 1.2x: %s); %.1f%% of the first round's tickets: %.2fx (a fair draw gives them <= %d units but with p 1e-4)\n",
		100*q.BotsShareOfTickets, 100*rep.BotsShareOfUnits, q.BotsUnitsOverTickets, goal(q.BotsUnitsOverTickets <= 1.2),
		100*q.BotsShareOfEarlyTickets, q.BotsUnitsOverEarlyTickets, q.FairBotUnits)
	fmt.Fprintf(w, "  bots skipping the queue: no grant %v, another's grant %v, %d won that way; 403s by code %v\n", q.Skips, q.Copied, q.BypassWins, q.Refusals)
	e := q.Estimate
	fmt.Fprintf(w, "  wait estimate error over %d admitted tickets: p50 %.1f%%, p90 %.1f%% (goal <= 15%%: %s), p50 %.0f ms, p90 %.0f ms; %d admitted at once, %d estimated but sold out first; %d of %d waiting tickets told no estimate\n",
		e.Tickets, 100*e.P50, 100*e.P90, goal(e.Tickets > 0 && e.P90 <= .15), e.AbsP50MS, e.AbsP90MS, e.AdmittedAtOnce, e.NeverAdmitted,
		e.WithoutEstimate, e.Waited)
	for _, ph := range []struct {
		name string
		p    EstimatePhase
	}{{"first 10 s after the draw", e.First}, {"after", e.After}} {
		fmt.Fprintf(w, "    %s: %d tickets, p50 %.1f%%, p90 %.1f%%, p50 %.0f ms, p90 %.0f ms\n",
			ph.name, ph.p.Tickets, 100*ph.p.P50, 100*ph.p.P90, ph.p.AbsP50MS, ph.p.AbsP90MS)
	}
	m := e.Moment
	fmt.Fprintf(w, "    as a moment (estimated_admission_at, the server's clock offset taken out): %d tickets, p50 %.1f%%, p90 %.1f%% (goal <= 15%%: %s), p50 %.0f ms, p90 %.0f ms\n",
		m.Tickets, 100*m.P50, 100*m.P90, goal(m.Tickets > 0 && m.P90 <= .15), m.AbsP50MS, m.AbsP90MS)
	if so := q.SellOut; so.SoldOut {
		fmt.Fprintf(w, "  sold out %.0f ms after the start with %d tickets waiting: told within p99 %.0f ms, max %.0f ms (goal <= 1 s: %s), %d never told\n",
			so.AtMS, so.Waiting, so.P99MS, so.MaxMS, goal(so.NotTold == 0 && so.MaxMS <= 1000), so.NotTold)
	} else {
		fmt.Fprintf(w, "  did not sell out\n")
	}
	if q.Resale != nil {
		writeResale(w, q.Resale)
	}
}

// goal names whether a goal was met.
func goal(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}
