package main

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// BotsReport is the bots mode's report (-bots; -json prints it as is).
type BotsReport struct {
	Settings BotsShape `json:"settings"`
	ItemID   int64     `json:"item_id"`
	// ServerClockOffsetMS is how far the server's clock was ahead of the
	// bench's, as the bots estimated it from the Date header.
	ServerClockOffsetMS float64    `json:"server_clock_offset_ms"`
	Humans              GroupStats `json:"humans"`
	Bots                GroupStats `json:"bots"`
	// BotsShareOfAccounts is bots / (bots + humans); BotsShareOfUnits the
	// bots' part of the units won; BotsAdvantage the second over the first
	// (1: the bots win what their numbers alone would give them).
	BotsShareOfAccounts float64 `json:"bots_share_of_accounts"`
	BotsShareOfUnits    float64 `json:"bots_share_of_units"`
	BotsAdvantage       float64 `json:"bots_advantage"`
	// FirstWinMS and LastWinMS are the first and last 202 after the start
	// (negative: before it, which would be a bug).
	FirstWinMS float64 `json:"first_win_ms"`
	LastWinMS  float64 `json:"last_win_ms"`
	// HumansBeforeSellOut arrived before the last unit was won; the win
	// rate compares them with the bots, who all arrived before it.
	HumansBeforeSellOut    int     `json:"humans_before_sell_out"`
	HumansBeforeSellOutWon float64 `json:"humans_before_sell_out_win_rate"`
	// Admission is the round trip of the 202s (with the queue, orders
	// with their admission grant).
	Admission OutcomeStats `json:"admission_202"`
	// Queue is set for a run with the waiting room on (-bots-queue).
	Queue *QueueStats `json:"queue,omitempty"`
	// Unsettled counts 202s still PENDING at the end of the poll timeout.
	Unsettled int      `json:"unsettled"`
	Audit     *Audit   `json:"audit,omitempty"`
	Checks    []string `json:"checks,omitempty"`
	Pass      bool     `json:"pass"`
}

// BotsShape is the workload of a bots run.
type BotsShape struct {
	Humans         int     `json:"humans"`
	Bots           int     `json:"bots"`
	Units          int     `json:"units"`
	Buckets        int     `json:"buckets"`
	LeadMS         float64 `json:"bots_lead_ms"`
	BotRetryMS     float64 `json:"bots_retry_ms"`
	HumansBeforeMS float64 `json:"humans_before_ms"`
	HumansAfterMS  float64 `json:"humans_after_ms"`
	HumanRetryMS   float64 `json:"humans_retry_ms"`
}

// GroupStats is what one group of accounts did.
type GroupStats struct {
	Accounts int `json:"accounts"`
	Won      int `json:"won"`
	Attempts int `json:"attempts"`
	// Outcomes counts every answer by outcome (the sale's rows, plus
	// "409 sale_not_active" for attempts before the start).
	Outcomes map[string]int `json:"outcomes"`
}

// summarizeBots counts the runs of the humans (runs[:humans]) and the
// bots (the rest).
func summarizeBots(runs []buyerRun, humans int, start time.Time, units int) BotsReport {
	var rep BotsReport
	group := func(rs []buyerRun) GroupStats {
		g := GroupStats{Accounts: len(rs), Outcomes: map[string]int{}}
		for _, r := range rs {
			g.Attempts += r.Attempts
			for k, v := range r.Outcomes {
				g.Outcomes[k] += v
			}
			if r.Won {
				g.Won++
			}
		}
		return g
	}
	rep.Humans, rep.Bots = group(runs[:humans]), group(runs[humans:])
	if n := len(runs); n > 0 {
		rep.BotsShareOfAccounts = float64(len(runs)-humans) / float64(n)
	}
	if won := rep.Humans.Won + rep.Bots.Won; won > 0 {
		rep.BotsShareOfUnits = float64(rep.Bots.Won) / float64(won)
	}
	if rep.BotsShareOfAccounts > 0 {
		rep.BotsAdvantage = rep.BotsShareOfUnits / rep.BotsShareOfAccounts
	}
	var wins []time.Time
	for _, r := range runs {
		if r.Won {
			wins = append(wins, r.WonAt)
		}
	}
	if len(wins) == 0 {
		return rep
	}
	sort.Slice(wins, func(i, j int) bool { return wins[i].Before(wins[j]) })
	rep.FirstWinMS, rep.LastWinMS = ms(wins[0].Sub(start)), ms(wins[len(wins)-1].Sub(start))
	last, won := wins[len(wins)-1], 0
	for _, r := range runs[:humans] {
		if !r.Arrived.IsZero() && r.Arrived.Before(last) {
			rep.HumansBeforeSellOut++
			if r.Won {
				won++
			}
		}
	}
	if rep.HumansBeforeSellOut > 0 {
		rep.HumansBeforeSellOutWon = float64(won) / float64(rep.HumansBeforeSellOut)
	}
	return rep
}

// botsChecks are what the buyers can see: no more units won than exist,
// nothing won before the start, every 202 settled.
func botsChecks(rep BotsReport, units int) []string {
	var c []string
	if won := rep.Humans.Won + rep.Bots.Won; won > units {
		c = append(c, fmt.Sprintf("I1: %d units won, %d on sale", won, units))
	}
	if rep.Humans.Won+rep.Bots.Won > 0 && rep.FirstWinMS < 0 {
		c = append(c, fmt.Sprintf("a 202 %.0f ms before the start", -rep.FirstWinMS))
	}
	if rep.Unsettled > 0 {
		c = append(c, fmt.Sprintf("I4: %d accepted requests still PENDING after the poll timeout", rep.Unsettled))
	}
	return c
}

// WriteBots prints the report as text, or as JSON.
func WriteBots(w io.Writer, rep BotsReport, asJSON bool) error {
	if asJSON {
		return writeIndented(w, rep)
	}
	s := rep.Settings
	mode := "first come first served"
	if rep.Queue != nil {
		mode = fmt.Sprintf("with the waiting room, %d admissions/s", rep.Queue.Rate)
	}
	fmt.Fprintf(w, "bots: %d humans and %d bots for %d units (item %d), %s\n", s.Humans, s.Bots, s.Units, rep.ItemID, mode)
	fmt.Fprintf(w, "  bots fire %.0f ms before the start (server clock offset %.1f ms) and retry every %.0f ms;\n", s.LeadMS, rep.ServerClockOffsetMS, s.BotRetryMS)
	fmt.Fprintf(w, "  humans arrive from %.1f s before to %.1f s after it and retry after %.1f s\n", s.HumansBeforeMS/1000, s.HumansAfterMS/1000, s.HumanRetryMS/1000)
	for _, g := range []struct {
		name string
		g    GroupStats
	}{{"humans", rep.Humans}, {"bots", rep.Bots}} {
		fmt.Fprintf(w, "  %-6s %7d accounts  %7d won  %8d attempts  %v\n", g.name, g.g.Accounts, g.g.Won, g.g.Attempts, g.g.Outcomes)
	}
	fmt.Fprintf(w, "  bots' share: %.1f%% of the accounts, %.1f%% of the units won (%.2fx)\n", 100*rep.BotsShareOfAccounts, 100*rep.BotsShareOfUnits, rep.BotsAdvantage)
	fmt.Fprintf(w, "  units won from %.0f ms to %.0f ms after the start; %d humans arrived before the last one, %.1f%% of them won\n",
		rep.FirstWinMS, rep.LastWinMS, rep.HumansBeforeSellOut, 100*rep.HumansBeforeSellOutWon)
	a := rep.Admission
	fmt.Fprintf(w, "  202 round trip over %d orders: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", a.Count, a.P50ms, a.P99ms, a.Maxms)
	if rep.Queue != nil {
		writeQueue(w, rep)
	}
	verdict := "PASS"
	if !rep.Pass {
		verdict = "FAIL"
	}
	if rep.Audit != nil {
		fmt.Fprintf(w, "  audit: ok=%v unpaid %d paid %d cancelled %d violations %v\n", rep.Audit.OK, rep.Audit.Unpaid, rep.Audit.Paid, rep.Audit.Cancelled, rep.Audit.Violations)
	}
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "  check failed: %s\n", c)
	}
	_, err := fmt.Fprintf(w, "  %s\n", verdict)
	return err
}
