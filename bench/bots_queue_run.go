package main

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// RunBotsQueue creates an item with its waiting room on, lets the humans
// and bots at it (bots_queue.go), waits for every 202 to settle and audits
// the item.
func RunBotsQueue(ctx context.Context, s Settings, bs BotSettings) (BotsReport, error) {
	g, err := newBotsRig(ctx, s, bs, queueConns(s, bs))
	if err != nil {
		return BotsReport{}, err
	}
	return g.queued(ctx, g.itemID(false))
}

// defaultQueueWindow is the server's queue_shuffle_window_ms for a new
// queue that does not name one (pkg/catalog input.go).
const defaultQueueWindow = 10 * time.Second

func (g *botsRig) queued(ctx context.Context, id int64) (BotsReport, error) {
	s, bs := g.s, g.bs
	humans, bots := s.Buyers, bs.Bots
	now := g.serverNow()
	opensServer, startServer := now.Add(bs.QueueOpenIn), now.Add(bs.StartIn)
	if err := g.api.CreateQueuedSale(ctx, id, s.Units, s.Buckets, opensServer, startServer, startServer.Add(time.Hour), bs.QueueRate, bs.QueueWindow); err != nil {
		return BotsReport{}, err
	}
	opens, start := opensServer.Add(-g.offset), startServer.Add(-g.offset) // by our clock
	slog.Info("bots: queued sale created", "item", id, "units", s.Units, "humans", humans, "bots", bots, "queue_rate", bs.QueueRate,
		"opens_in", time.Until(opens).Round(time.Millisecond), "starts_in", time.Until(start).Round(time.Millisecond), "server_clock_offset", g.offset.Round(time.Millisecond))

	// The first round, drawn at the window's end (one round: the bench
	// leaves queue_round_ms out), holds the tickets taken before it.
	window := bs.QueueWindow
	if window < 0 {
		window = defaultQueueWindow
	}
	drawServer := startServer.Add(window)
	// Room for the gate to admit every ticket if the item does not sell
	// out, on top of the first-come-first-served run's bound.
	admitAll := time.Duration(float64(humans+bots) / float64(bs.QueueRate) * float64(time.Second))
	bound := bs.StartIn + window + bs.HumansAfter + admitAll + s.PollTimeout
	if bs.Unpaid > 0 {
		// The resale's own bound (watchResale) ends the players first;
		// this is the backstop.
		bound += cmpOr(bs.ResaleWait, time.Hour)
	}
	runCtx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	game := newQueueGame(g.c, s.Target, id)
	if bs.Unpaid > 0 {
		game.resale = newResalePlay(&API{Base: s.Target, Client: game.poll}, g.offset, g.tokens.Buyers[:humans+bots], humans, bs.Unpaid, bs.Decline, s.Seed)
	}
	playCtx, stopPlay := context.WithCancel(runCtx)
	defer stopPlay()
	runs := make([]ticketRun, humans+bots)
	arrivals := humanArrivals(humans, start, bs.HumansBefore, bs.HumansAfter, s.Seed)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i < humans {
				runs[i] = game.human(playCtx, g.tokens.Buyers[i], arrivals[i], bs.HumanRetry)
				return
			}
			runs[i] = game.bot(playCtx, i, g.tokens.Buyers[i], opens, start.Add(-bs.Lead), bs.Retry)
		}()
	}
	var end resaleEnd
	if game.resale != nil {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		end = watchResale(runCtx, g.api, id, game.resale, bs, start, done)
		slog.Info("bots: resale over", "why", end.Why, "after_sell_out", end.At.Sub(end.SoldOutAt).Round(time.Millisecond))
		stopPlay()
	}
	wg.Wait()
	attackEnd := time.Now()
	rep := summarizeQueue(runs, humans, start, drawServer, drawServer.Add(-g.offset), s.Units, bs.QueueRate)
	orders := make([]buyerRun, len(runs))
	var claims []buyerRun // in the runs' order, for the resale
	if game.resale != nil {
		claims = make([]buyerRun, len(runs))
	}
	own, claimed := map[string]int{}, map[string]int{}
	for i, r := range runs {
		orders[i] = r.buyerRun
		for k, v := range r.Outcomes {
			own[k] += v
		}
		for k, v := range r.Claim.Outcomes {
			claimed[k] += v
		}
		if claims != nil {
			claims[i] = r.Claim
		}
	}
	rep.Checks = queueChecks(rep.Queue, own)
	if game.resale != nil {
		rep.Queue.Resale = summarizeResale(runs, humans, game.resale, bs, end)
	}
	rep, err := g.finish(ctx, id, rep, orders, claims)
	if st := rep.Queue.Resale; st != nil {
		fillResaleAudit(st, rep.Audit)
		if c := resaleChecks(st, claimed, rep.Queue.SellOut.SoldOut); len(c) > 0 {
			rep.Checks = append(rep.Checks, c...)
			rep.Pass = false
		}
	}
	slog.Info("bots: queued sale done", "attack", attackEnd.Sub(start).Round(time.Millisecond), "won_by_bots", rep.Bots.Won, "won_by_humans", rep.Humans.Won, "pass", rep.Pass)
	return rep, err
}
