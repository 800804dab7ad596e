// Command bench is flashsale's load generator, demo and baseline comparison.
//
// It mints JWTs for N buyers, creates an item with K units through the admin
// API, fires order attempts (open loop at a rate with vegeta, or closed loop
// at a concurrency) including duplicate clicks and Idempotency-Key replays,
// polls every accepted request to a terminal status, pays for some, samples
// the consumer lag, reads the admin audit and prints one report. With
// -compare it first runs two BASELINES served by this tool on loopback ports
// (synchronous MySQL SELECT ... FOR UPDATE; a Redis SET NX lock around MySQL)
// with the same workload, so the ratio to flashsale is measured side by side.
//
// Exit status: 0 all audits pass, 1 an audit or check failed (or nothing
// could be measured), 2 bad settings.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	var c config.Common
	var s Settings
	var cc config.Consumer // the drain mode's consumer
	var cs CapacitySettings
	var bs BotSettings
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	if err := config.Parse(fs, args, &c, &s, &cc, &cs, &bs); err != nil {
		return config.Exit(fs, err)
	}
	if err := stock.UseDeployment(c.Deployment); err != nil { // the pipeline's keys
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	if err := setKafkaSecurity(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	// Refuse -html before the sale, not after it, when the charting script
	// is missing from this build.
	if s.HTML != "" {
		if _, err := echartsJS(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 2
		}
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))

	// SIGINT stops the attack and the polling; the partial report (with its
	// audit) is still printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cs.Capacity {
		rep, err := RunCapacity(ctx, c, s, cs)
		if err == nil {
			err = WriteCapacity(os.Stdout, rep, s.JSON)
		}
		if err != nil {
			slog.Error("bench", "err", err)
			return 1
		}
		return 0
	}
	if bs.Bots > 0 {
		if err := runBots(ctx, s, bs, os.Stdout); err != nil {
			slog.Error("bench", "err", err)
			return 1
		}
		return 0
	}
	if s.Drain > 0 {
		if err := runDrain(ctx, c, cc, s, os.Stdout); err != nil {
			slog.Error("bench", "err", err)
			return 1
		}
		return 0
	}
	out, err := Execute(ctx, c, s)
	if err != nil {
		slog.Error("bench", "err", err)
		if len(out.Runs) == 0 {
			return 1
		}
	}
	// The HTML report is written whatever the audit says: a failed run is
	// when its time line is most wanted. Failing to write it fails the run,
	// after the text report.
	htmlOK := true
	if s.HTML != "" {
		if err := WriteHTMLFile(s.HTML, out); err != nil {
			slog.Error("bench", "err", err)
			htmlOK = false
		} else {
			slog.Info("html report written", "path", s.HTML)
		}
	}
	write := WriteText
	if s.JSON {
		write = WriteJSON
	}
	if err := write(os.Stdout, out); err != nil {
		slog.Error("bench", "err", err)
		return 1
	}
	if !out.Pass || !htmlOK {
		return 1
	}
	return 0
}
