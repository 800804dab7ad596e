package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/stock"
	"github.com/flashsale-dev/flashsale/pkg/tracing"
)

// Setup builds a deployable's parts and declares on p what it runs. It is
// called once the logger, the signals and tracing are up, with a context
// that ends on SIGINT or SIGTERM. An error stops start-up: what it had
// deferred is undone and the process exits 1.
type Setup func(ctx context.Context, p *Process) error

// Deployable is one long-running command: its name (the logger's service,
// the registry's deployable, the tracer's service.name), its settings and
// its Setup.
type Deployable struct {
	Name string
	// Common and Config are filled by Main from the flags and FLASHSALE_*
	// variables; Run reads Common as it is.
	Common *config.Common
	Config config.Registerer
	Setup  Setup
	// LogHandler, when set, wraps the JSON log handler (the ingress adds
	// the request id of the context).
	LogHandler func(slog.Handler) slog.Handler
	// ExitGrace is how long past FLASHSALE_SHUTDOWN_TIMEOUT a shutdown may
	// take before the process dumps its goroutines and exits 3, for a
	// deployable whose drain takes the whole timeout and still has work
	// after it.
	ExitGrace time.Duration
	// ExitCodes are the exit codes, other than 1, of errors Run may return
	// (matched with errors.Is).
	ExitCodes map[error]int

	// exitAfter arms the bound on the shutdown (ops.ExitAfter; tests
	// replace it, since it ends the process).
	exitAfter func(ctx context.Context, d time.Duration, log *slog.Logger)
}

// Main runs d as the process: it parses the settings (a bad one exits 2,
// -h and -version 0), builds the logger, calls Run, logs "NAME failed"
// and exits non-zero if Run returns an error, and logs "NAME stopped"
// otherwise.
func Main(d Deployable) {
	fs := flag.NewFlagSet(d.Name, flag.ContinueOnError)
	if err := config.Parse(fs, os.Args[1:], d.Common, d.Config); err != nil {
		os.Exit(config.Exit(fs, err))
	}
	if err := stock.UseDeployment(d.Common.Deployment); err != nil { // validated by Parse
		os.Exit(config.Exit(fs, fmt.Errorf("%w: %v", config.ErrInvalid, err)))
	}
	h := ops.NewLogger(d.Name, d.Common.LogLevel, d.Common.LogBurst).Handler()
	if d.LogHandler != nil {
		h = d.LogHandler(h)
	}
	log := tracing.Logger(slog.New(h))
	if err := Run(context.Background(), d, log); err != nil {
		log.Error(d.Name+" failed", "err", err)
		os.Exit(exitCode(err, d.ExitCodes))
	}
	log.Info(d.Name + " stopped")
}

func exitCode(err error, codes map[error]int) int {
	for target, code := range codes {
		if errors.Is(err, target) {
			return code
		}
	}
	return 1
}

// Run runs d until SIGINT, SIGTERM, ctx's end, or the end of any of its
// servers or workers, then shuts it down: every server drains (bounded by
// the drain it was given), every worker returns, what Setup deferred is
// undone last first, and tracing is flushed. From the moment the shutdown
// starts, the process has FLASHSALE_SHUTDOWN_TIMEOUT plus d.ExitGrace
// before it dumps its goroutines and exits 3 (ops.ExitAfter). Run returns
// the errors of setup, the servers, a refused start-up check, the workers
// and the deferred calls, joined; a shutdown asked for is not an error.
func Run(ctx context.Context, d Deployable, log *slog.Logger) (err error) {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exitAfter := d.exitAfter
	if exitAfter == nil {
		exitAfter = ops.ExitAfter
	}
	exitAfter(ctx, d.Common.ShutdownTimeout+d.ExitGrace, log)
	stopTracing, err := tracing.Init(ctx, d.Name, log) // deferred first: flushes last
	if err != nil {
		return err
	}
	defer stopTracing()
	p := newProcess(d.Name, *d.Common, log)
	defer func() { err = errors.Join(err, p.undo()) }()
	if err := d.Setup(ctx, p); err != nil {
		cancel() // the bound covers undoing what setup built
		return err
	}
	ops.ServePprof(ctx, d.Common.PprofAddr, log)
	return p.run(ctx, cancel)
}
