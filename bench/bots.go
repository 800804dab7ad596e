package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The bots mode (-bots N) measures who wins a first-come-first-served sale
// when bots take part. It is the adversary model of a flash sale:
//
//   - bots: N accounts synchronised to the server's clock (its Date header,
//     bots_clock.go) that fire at the start minus -bots-lead and retry every
//     -bots-retry (as fast as the per-user rate limit allows) until they win
//     or are told the item is sold out;
//   - humans: the -buyers accounts arriving uniformly from -humans-before
//     before the start to -humans-after after it, each trying once and, when
//     told "not open yet", 429 or 503, again after a polite -humans-retry.
//
// Every account wants one unit (per-user limit 1). The report gives the
// bots' share of the accounts and of the units won, and the audit of the
// item once every 202 settled. -bots-queue plays the same mix against an
// item with its waiting room (bots_queue.go), -bots-compare both modes in
// one invocation (bots_compare.go).

// botsOutcome names an answer of the bots mode.
func botsOutcome(code int, body []byte, transportErr string) string {
	out, _, detail := Classify(code, body, transportErr)
	if out == OutOther && (detail == "409 sale_not_active" || strings.HasPrefix(detail, "403 ")) {
		return detail // the refusals the bots meet: too early, no or a bad admission grant
	}
	return out
}

// buyerRun is what one account did.
type buyerRun struct {
	Attempts  int
	Won       bool
	RequestID string
	WonAt     time.Time // the 202's arrival
	// WinLatency is the 202's round trip (the admission's latency as the
	// buyer saw it).
	WinLatency time.Duration
	Arrived    time.Time // the first attempt
	Outcomes   map[string]int
}

// account plays one buyer or bot until it wins, is told sold out or
// already holds the item, or ctx ends. first is when it first tries;
// retry says how long it waits after an answer that leaves it trying.
func account(ctx context.Context, c *http.Client, url, bearer string, body []byte, first time.Time, retry func(outcome string) time.Duration) buyerRun {
	r := buyerRun{Outcomes: map[string]int{}}
	if !sleepUntil(ctx, first) {
		return r
	}
	r.Arrived = time.Now()
	for ctx.Err() == nil {
		sent := time.Now()
		code, b, errText := post(ctx, c, url, bearer, body)
		r.Attempts++
		out := botsOutcome(code, b, errText)
		r.Outcomes[out]++
		switch out {
		case OutAccepted:
			_, id, _ := Classify(code, b, errText)
			r.Won, r.RequestID, r.WonAt = true, id, time.Now()
			r.WinLatency = r.WonAt.Sub(sent)
			return r
		case OutSoldOut, OutAlready:
			return r
		}
		if ctx.Err() != nil || !sleepUntil(ctx, time.Now().Add(retry(out))) {
			return r
		}
	}
	return r
}

// post sends one order attempt.
func post(ctx context.Context, c *http.Client, url, bearer string, body []byte) (int, []byte, string) {
	return send(ctx, c, http.MethodPost, url, bearer, body)
}

// sleepUntil waits until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// humanArrivals spreads n humans' first attempts uniformly over
// [start-before, start+after], reproducibly from seed.
func humanArrivals(n int, start time.Time, before, after time.Duration, seed int64) []time.Time {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x68756d616e))
	out := make([]time.Time, n)
	span := before + after
	for i := range out {
		out[i] = start.Add(-before + time.Duration(rng.Int64N(int64(span)+1)))
	}
	return out
}

// runBots runs the bots mode against s.Target (first come first served,
// with the queue, or both side by side) and writes its report.
func runBots(ctx context.Context, s Settings, bs BotSettings, w io.Writer) error {
	if bs.Compare {
		return runBotsCompare(ctx, s, bs, w)
	}
	run := RunBots
	if bs.Queue {
		run = RunBotsQueue
	}
	rep, err := run(ctx, s, bs)
	if err != nil {
		return err
	}
	if err := WriteBots(w, rep, s.JSON); err != nil {
		return err
	}
	if !rep.Pass {
		return fmt.Errorf("bench: bots run did not pass: %v", rep.Checks)
	}
	return nil
}

// botsRig is what every bots run shares: the accounts (the -buyers humans,
// then the bots), one client and the server's clock as the bots read it.
type botsRig struct {
	s      Settings
	bs     BotSettings
	tokens Tokens
	c      *http.Client
	api    *API
	offset time.Duration
}

// newBotsRig mints the accounts and reads the server's clock. conns is the
// client's connection bound: the first-come-first-served mode keeps 512
// (its published numbers were measured so); the queue holds one long poll
// per ticket, and a skipping bot a second request, so it needs one each.
func newBotsRig(ctx context.Context, s Settings, bs BotSettings, conns int) (*botsRig, error) {
	tokens, err := MintTokens(s.JWTSecret, s.Buyers+bs.Bots, 6*time.Hour)
	if err != nil {
		return nil, err
	}
	conns = max(s.Concurrency, conns)
	c := NewHTTPClient(conns, s.RequestTimeout)
	c.Transport.(*http.Transport).MaxConnsPerHost = conns
	offset, err := serverClockOffset(ctx, c, s.Target+"/healthz", 10*time.Millisecond)
	if err != nil {
		return nil, err
	}
	return &botsRig{s: s, bs: bs, tokens: tokens, c: c, api: &API{Base: s.Target, Client: c, Admin: tokens.Admin}, offset: offset}, nil
}

// queueConns is the connections a queue run needs.
func queueConns(s Settings, bs BotSettings) int { return max(512, s.Buyers+2*bs.Bots+64) }

// serverNow is now by the server's clock, to the millisecond, as an operator
// announces a sale.
func (g *botsRig) serverNow() time.Time {
	return time.Now().Add(g.offset).UTC().Truncate(time.Millisecond)
}

// itemID is the run's item: -item for a single run, else a fresh one.
func (g *botsRig) itemID(fresh bool) int64 {
	if g.s.ItemID != 0 && !fresh {
		return g.s.ItemID
	}
	return newItemID()
}

// RunBots creates the item, lets the humans and bots at it first come
// first served, waits for every 202 to settle and audits the item.
func RunBots(ctx context.Context, s Settings, bs BotSettings) (BotsReport, error) {
	g, err := newBotsRig(ctx, s, bs, 512)
	if err != nil {
		return BotsReport{}, err
	}
	return g.firstComeFirstServed(ctx, g.itemID(false))
}

func (g *botsRig) firstComeFirstServed(ctx context.Context, id int64) (BotsReport, error) {
	s, bs := g.s, g.bs
	humans, bots := s.Buyers, bs.Bots
	startServer := g.serverNow().Add(bs.StartIn)
	if err := g.api.CreateSale(ctx, id, s.Units, s.Buckets, startServer, startServer.Add(time.Hour)); err != nil {
		return BotsReport{}, err
	}
	start := startServer.Add(-g.offset) // the same moment by our clock
	slog.Info("bots: sale created", "item", id, "units", s.Units, "humans", humans, "bots", bots,
		"starts_in", time.Until(start).Round(time.Millisecond), "server_clock_offset", g.offset.Round(time.Millisecond))

	runCtx, cancel := context.WithTimeout(ctx, bs.StartIn+bs.HumansAfter+s.PollTimeout)
	defer cancel()
	url, body := s.Target+"/api/v1/orders", orderBody(id)
	runs := make([]buyerRun, humans+bots)
	arrivals := humanArrivals(humans, start, bs.HumansBefore, bs.HumansAfter, s.Seed)
	var wg sync.WaitGroup
	for i := range runs {
		first, retry := start.Add(-bs.Lead), func(string) time.Duration { return bs.Retry }
		if i < humans {
			first, retry = arrivals[i], func(string) time.Duration { return bs.HumanRetry }
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = account(runCtx, g.c, url, g.tokens.Buyers[i], body, first, retry)
		}()
	}
	wg.Wait()
	attackEnd := time.Now()

	rep := summarizeBots(runs, humans, start, s.Units)
	rep, err := g.finish(ctx, id, rep, runs, nil)
	slog.Info("bots: done", "attack", attackEnd.Sub(start).Round(time.Millisecond), "won_by_bots", rep.Bots.Won, "won_by_humans", rep.Humans.Won, "pass", rep.Pass)
	return rep, err
}

// finish fills what every mode reports: the run's shape, the 202s' round
// trip, then waits for every 202 to settle, audits the item and checks.
// runs are the accounts in order (humans, then bots); claims, nil or in
// the same order, the queued run's claims of waitlist offers, settled too
// but not in the 202s' round trip.
func (g *botsRig) finish(ctx context.Context, id int64, rep BotsReport, runs, claims []buyerRun) (BotsReport, error) {
	rep.ItemID, rep.ServerClockOffsetMS = id, ms(g.offset)
	rep.Settings = botsSettingsOf(g.s, g.bs)
	rep.Admission = admissionStats(runs)
	// Every 202 settles before the audit (I4), as in a sale.
	settleCtx, cancelSettle := context.WithTimeout(ctx, g.s.PollTimeout)
	defer cancelSettle()
	rep.Unsettled = settleAll(settleCtx, g.api, runs, g.tokens)
	if claims != nil {
		rep.Unsettled += settleAll(settleCtx, g.api, claims, g.tokens)
	}
	au, err := auditSettled(settleCtx, func(ctx context.Context) (Audit, error) { return g.api.Audit(ctx, id) })
	if err != nil {
		return rep, fmt.Errorf("bench: bots audit: %w", err)
	}
	rep.Audit = &au
	// Units the reaper gave back (cancelled unpaid orders) can be won
	// again: through the waitlist, or from the stock.
	rep.Checks = append(botsChecks(rep, g.s.Units+int(au.Cancelled)), rep.Checks...)
	rep.Pass = au.OK && len(rep.Checks) == 0
	// The sale is over once it is audited (as RunScenario's): ending it
	// lets the reaper's live auditor stop watching it once it settled, so
	// a second sale on the same stack (-bots-compare) does not pay for
	// auditing this one.
	if err := g.api.EndSale(context.WithoutCancel(ctx), id); err != nil {
		slog.Warn("could not end the sale after its run", "item", id, "err", err)
	}
	return rep, nil
}

// settleAll long-polls every won request until it leaves PENDING; it
// returns how many did not in time.
func settleAll(ctx context.Context, api *API, runs []buyerRun, tokens Tokens) int {
	var mu sync.Mutex
	unsettled := 0
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i, r := range runs {
		if !r.Won {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for ctx.Err() == nil {
				st, err := api.Status(ctx, tokens.Buyers[i], r.RequestID, 5*time.Second)
				if err == nil && Terminal(st.Status) {
					return
				}
				if err != nil && !sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
					break
				}
			}
			mu.Lock()
			unsettled++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return unsettled
}

// botsSettingsOf records the run's shape in its report.
func botsSettingsOf(s Settings, bs BotSettings) BotsShape {
	return BotsShape{Humans: s.Buyers, Bots: bs.Bots, Units: s.Units, Buckets: max(s.Buckets, 1),
		LeadMS: ms(bs.Lead), BotRetryMS: ms(bs.Retry), HumansBeforeMS: ms(bs.HumansBefore), HumansAfterMS: ms(bs.HumansAfter), HumanRetryMS: ms(bs.HumanRetry)}
}
