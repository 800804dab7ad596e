package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/startup"
)

// Check is a start-up check (Process.Await): it waits for what it checks
// until ctx ends, and returns an error only to refuse it.
type Check func(ctx context.Context) error

// Process is what a Setup declares its deployable runs on, and what it
// builds its parts with.
type Process struct {
	// Log is the deployable's logger; Registry its metrics registry (with
	// the Go, process and flashsale_build_info collectors), served by Ops.
	Log      *slog.Logger
	Registry *prometheus.Registry

	name    string
	c       config.Common
	servers []server
	ready   *ops.Readiness
	stages  [][]Check
	workers []func(context.Context) error
	undos   []func() error
}

type server struct {
	srv   *http.Server
	addr  string
	drain time.Duration
	log   *slog.Logger
}

func newProcess(name string, c config.Common, log *slog.Logger) *Process {
	return &Process{Log: log, Registry: ops.NewRegistry(name), name: name, c: c}
}

// Serve serves srv on addr from the end of Setup until the shutdown, when
// it stops accepting and lets the requests in flight finish within drain.
// Every listener (Serve's and Ops') is bound before any serves: when one
// answers the others do too, and a taken port stops the process at once.
// A server that stops stops the process.
func (p *Process) Serve(srv *http.Server, addr string, drain time.Duration) {
	p.servers = append(p.servers, server{srv: srv, addr: addr, drain: drain, log: p.Log})
}

// Ops is the deployable's ops listener on addr: /healthz, /readyz from
// ready and /metrics from Registry (ops.Mux), or srv's own routes when srv
// is not nil. It serves from the end of Setup, through the start-up checks
// (a pod waiting for its stores is alive, not ready), to the shutdown,
// draining within a quarter of FLASHSALE_SHUTDOWN_TIMEOUT; one that stops
// stops the process (an unobservable replica is worse than none). While it
// serves, flashsale_dependency_up follows ready's checks. Call it once.
func (p *Process) Ops(addr string, ready ops.Readiness, srv *http.Server) {
	if srv == nil {
		srv = &http.Server{Handler: ops.Mux(p.Registry, ready), ReadHeaderTimeout: 5 * time.Second}
	}
	p.ready = &ready
	p.servers = append(p.servers, server{srv: srv, addr: addr, drain: p.c.ShutdownTimeout / 4,
		log: p.Log.With("component", "ops")})
}

// Await adds a stage of start-up checks, run with the listeners up: the
// checks of a stage run together, the stages one after the other, and the
// workers start when the last has passed. A check that refuses (returns an
// error before the shutdown) stops the process with startup.ErrRefused.
func (p *Process) Await(checks ...Check) {
	p.stages = append(p.stages, checks)
}

// Go adds a worker, started once every Await stage has passed and run
// until the shutdown; one that returns stops the process.
func (p *Process) Go(run func(ctx context.Context) error) {
	p.workers = append(p.workers, run)
}

// Defer adds f to what is undone once every server and worker has
// returned (or Setup has failed), last added first, as a defer in main
// would; its error is Run's too.
func (p *Process) Defer(f func() error) {
	p.undos = append(p.undos, f)
}

// DeferClose is Defer of c.Close, its error wrapped as "NAME: close
// WHAT: ...".
func (p *Process) DeferClose(what string, c io.Closer) {
	p.Defer(func() error {
		if err := c.Close(); err != nil {
			return fmt.Errorf("%s: close %s: %w", p.name, what, err)
		}
		return nil
	})
}

func (p *Process) undo() error {
	var errs []error
	for i := len(p.undos) - 1; i >= 0; i-- {
		errs = append(errs, p.undos[i]())
	}
	p.undos = nil
	return errors.Join(errs...)
}

// run binds the listeners, serves, awaits the checks, starts the workers,
// and returns when all have returned; the first server or worker to
// return, or a refused check, cancels ctx for the others.
func (p *Process) run(ctx context.Context, cancel context.CancelFunc) error {
	lns := make([]net.Listener, 0, len(p.servers))
	for _, s := range p.servers {
		ln, err := ops.Listen(s.addr)
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return err
		}
		lns = append(lns, ln)
	}
	g := &group{cancel: cancel}
	for i, s := range p.servers {
		g.run(true, func() error { return ops.ServeListener(ctx, s.srv, lns[i], s.drain, s.log) })
	}
	if p.ready != nil {
		up := ops.NewDependencyGauge(p.Registry)
		g.run(false, func() error {
			ops.WatchDependencies(ctx, *p.ready, startup.WatchEvery, up, p.Log)
			return nil
		})
	}
	g.run(false, func() error {
		if err := p.await(ctx); err != nil {
			cancel()
			return err
		}
		if ctx.Err() != nil {
			return nil // stopped while waiting: a shutdown, not a failure
		}
		for _, w := range p.workers {
			g.run(true, func() error { return w(ctx) })
		}
		return nil
	})
	return g.wait()
}

// await runs the stages; the first check of a stage to refuse ends the
// stage's others.
func (p *Process) await(ctx context.Context) error {
	for _, stage := range p.stages {
		sctx, cancel := context.WithCancel(ctx)
		errs := make([]error, len(stage))
		var wg sync.WaitGroup
		for i, check := range stage {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := check(sctx); err != nil && sctx.Err() == nil {
					errs[i] = err
					cancel()
				}
			}()
		}
		wg.Wait()
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err := errors.Join(errs...); err != nil {
			p.Log.Error("start-up check refused; stopping", "err", err)
			return fmt.Errorf("%w: %w", startup.ErrRefused, err)
		}
	}
	return nil
}

// group runs tasks and keeps their errors in the order they were started.
type group struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// run starts f; when f returns, stops says whether that ends the process.
// It may be called by a task of the group while wait waits.
func (g *group) run(stops bool, f func() error) {
	g.mu.Lock()
	i := len(g.errs)
	g.errs = append(g.errs, nil)
	g.mu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := f()
		g.mu.Lock()
		g.errs[i] = err
		g.mu.Unlock()
		if stops {
			g.cancel()
		}
	}()
}

func (g *group) wait() error {
	g.wg.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.errs...)
}
