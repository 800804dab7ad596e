package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/config"
	"github.com/flashsale-dev/flashsale/pkg/ops"
	"github.com/flashsale-dev/flashsale/pkg/startup"
)

// These tests need no stack: the runner's tasks here are channels, and its
// servers listen on loopback ports the kernel picks.

const shutdownTimeout = 20 * time.Second

// harness is one Run under test: its log's "listening" lines, the events
// its tasks record, and the bound it armed.
type harness struct {
	t         *testing.T
	listening chan listenLine
	seen      map[string]string // component: address, as addr read them

	mu     sync.Mutex
	events []string

	armed chan time.Duration // the bound, once the shutdown has started
}

type listenLine struct{ component, addr string }

func newHarness(t *testing.T) *harness {
	t.Setenv("OTEL_SDK_DISABLED", "true") // tracing off, whatever the environment says
	return &harness{t: t, listening: make(chan listenLine, 8), seen: map[string]string{}, armed: make(chan time.Duration, 1)}
}

func (h *harness) record(e string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func (h *harness) recorded() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// run starts Run with setup in the background; its result arrives on the
// channel returned.
func (h *harness) run(ctx context.Context, grace time.Duration, setup Setup) <-chan error {
	d := Deployable{Name: "test", Common: &config.Common{ShutdownTimeout: shutdownTimeout, StoreTimeout: time.Second},
		Setup: setup, ExitGrace: grace,
		exitAfter: func(ctx context.Context, d time.Duration, _ *slog.Logger) {
			go func() { <-ctx.Done(); h.armed <- d }()
		}}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, d, slog.New(&capture{listening: h.listening})) }()
	return done
}

// addr waits for the "listening" line of component ("" for a server of
// Serve, "ops" for the ops listener).
// goWorker starts a worker in p that closes up once running, then runs
// until the shutdown and records "worker returned".
func (h *harness) goWorker(p *Process, up chan<- struct{}) {
	p.Go(func(ctx context.Context) error {
		close(up)
		<-ctx.Done()
		h.record("worker returned")
		return nil
	})
}

func (h *harness) addr(component string) string {
	for {
		if a, ok := h.seen[component]; ok {
			return a
		}
		l := <-h.listening
		h.seen[l.component] = l.addr
	}
}

// wait returns Run's error; a Run that never returns fails the test by the
// go test timeout, with every goroutine's stack.
func wait(done <-chan error) error { return <-done }

func TestWorkerErrorStopsTheOthers(t *testing.T) {
	h := newHarness(t)
	boom := errors.New("boom")
	done := h.run(context.Background(), 0, func(ctx context.Context, p *Process) error {
		p.Go(func(ctx context.Context) error {
			<-ctx.Done()
			h.record("patient worker stopped")
			return nil
		})
		p.Go(func(ctx context.Context) error { return boom })
		p.Defer(func() error { h.record("undone"); return nil })
		return nil
	})
	if err := wait(done); !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the failed worker's %v", err, boom)
	}
	if got, want := h.recorded(), []string{"patient worker stopped", "undone"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if d := <-h.armed; d != shutdownTimeout {
		t.Errorf("bound armed at %v, want FLASHSALE_SHUTDOWN_TIMEOUT %v", d, shutdownTimeout)
	}
}

// TestShutdownOrder: on the parent's end, the API stops accepting and the
// request in flight finishes, the workers return, and only then is what
// setup deferred undone, last deferred first.
func TestShutdownOrder(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inHandler := make(chan struct{})
	shuttingDown := make(chan struct{})
	workerUp := make(chan struct{})
	done := h.run(ctx, 0, func(ctx context.Context, p *Process) error {
		p.Defer(func() error { h.record("undo store"); return nil })
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(inHandler)
			<-shuttingDown // held until the shutdown has begun
			h.record("request answered")
		})}
		srv.RegisterOnShutdown(func() { h.record("api shutting down"); close(shuttingDown) })
		p.Serve(srv, "127.0.0.1:0", shutdownTimeout)
		p.Defer(func() error { h.record("undo writer"); return nil })
		h.goWorker(p, workerUp)
		return nil
	})
	addr := h.addr("")
	<-workerUp
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	<-inHandler
	cancel()
	if err := wait(done); err != nil {
		t.Fatalf("Run = %v, want nil (a shutdown asked for)", err)
	}
	if err := <-answered; err != nil {
		t.Errorf("request in flight at the shutdown: %v, want its answer", err)
	}
	got := h.recorded()
	at := func(e string) int { return slices.Index(got, e) }
	if at("api shutting down") < 0 || at("request answered") < 0 || at("worker returned") < 0 {
		t.Fatalf("events %q: missing the shutdown's steps", got)
	}
	if tail := got[len(got)-2:]; !slices.Equal(tail, []string{"undo writer", "undo store"}) {
		t.Errorf("events %q: want the undos last, the last deferred first", got)
	}
	if at("api shutting down") > at("request answered") {
		t.Errorf("events %q: the request was answered before the shutdown it waited for", got)
	}
}

func TestSignalStopsRunWithinTheBound(t *testing.T) {
	h := newHarness(t)
	workerUp := make(chan struct{})
	done := h.run(context.Background(), 5*time.Second, func(ctx context.Context, p *Process) error {
		h.goWorker(p, workerUp)
		return nil
	})
	<-workerUp // Run's signal handler is registered by now
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := wait(done); err != nil {
		t.Fatalf("Run = %v after SIGTERM, want nil", err)
	}
	if got := h.recorded(); !slices.Equal(got, []string{"worker returned"}) {
		t.Errorf("events %q, want the worker stopped", got)
	}
	if d := <-h.armed; d != shutdownTimeout+5*time.Second {
		t.Errorf("bound armed at %v, want FLASHSALE_SHUTDOWN_TIMEOUT plus ExitGrace, %v", d, shutdownTimeout+5*time.Second)
	}
}

// TestWorkersStartAfterTheChecks: the stages run one after the other with
// the ops listener answering, and the workers start after the last.
func TestWorkersStartAfterTheChecks(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	done := h.run(ctx, 0, func(ctx context.Context, p *Process) error {
		p.Ops("127.0.0.1:0", ops.Readiness{Timeout: time.Second}, nil)
		p.Await(func(ctx context.Context) error {
			<-release
			h.record("mysql up")
			return nil
		}, func(ctx context.Context) error {
			<-release
			h.record("redis up")
			return nil
		})
		p.Await(func(ctx context.Context) error { h.record("clock checked"); return nil })
		p.Go(func(ctx context.Context) error {
			h.record("worker started")
			cancel()
			return nil
		})
		return nil
	})
	resp, err := http.Get("http://" + h.addr("ops") + "/healthz")
	if err != nil {
		t.Fatalf("ops listener while the stores are waited for: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz while waiting: %s, want 200", resp.Status)
	}
	if got := h.recorded(); len(got) != 0 {
		t.Errorf("events %q before the stores answered, want none", got)
	}
	close(release)
	if err := wait(done); err != nil {
		t.Fatalf("Run = %v", err)
	}
	got := h.recorded()
	if len(got) != 4 || !slices.Equal(got[2:], []string{"clock checked", "worker started"}) {
		t.Errorf("events %q, want both stores, then the clock, then the worker", got)
	}
}

func TestRefusedCheckStopsBeforeTheWorkers(t *testing.T) {
	h := newHarness(t)
	behind := errors.New("schema behind: 0009 not applied; run setup")
	done := h.run(context.Background(), 0, func(ctx context.Context, p *Process) error {
		p.Ops("127.0.0.1:0", ops.Readiness{Timeout: time.Second}, nil)
		p.Await(func(ctx context.Context) error { return behind },
			func(ctx context.Context) error { // a store still down: waited for until the refusal ends the wait
				<-ctx.Done()
				return ctx.Err()
			})
		p.Await(func(ctx context.Context) error { h.record("second stage"); return nil })
		p.Go(func(ctx context.Context) error { h.record("worker started"); return nil })
		return nil
	})
	err := wait(done)
	if !errors.Is(err, startup.ErrRefused) || !errors.Is(err, behind) {
		t.Fatalf("Run = %v, want %v wrapping %v", err, startup.ErrRefused, behind)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v: the check the refusal cancelled is not a failure", err)
	}
	if got := h.recorded(); len(got) != 0 {
		t.Errorf("events %q after a refusal, want none", got)
	}
}

func TestShutdownWhileWaitingIsNotAFailure(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := make(chan struct{})
	done := h.run(ctx, 0, func(ctx context.Context, p *Process) error {
		p.Await(func(ctx context.Context) error {
			close(waiting)
			<-ctx.Done()
			return fmt.Errorf("mysql: %w", ctx.Err())
		})
		p.Go(func(ctx context.Context) error { h.record("worker started"); return nil })
		return nil
	})
	<-waiting
	cancel()
	if err := wait(done); err != nil {
		t.Fatalf("Run = %v, want nil: stopped while waiting", err)
	}
	if got := h.recorded(); len(got) != 0 {
		t.Errorf("events %q, want no worker started", got)
	}
}

func TestSetupErrorUndoesWhatItBuilt(t *testing.T) {
	h := newHarness(t)
	refused := errors.New("mysql: access denied")
	done := h.run(context.Background(), 0, func(ctx context.Context, p *Process) error {
		p.Defer(func() error { h.record("pool closed"); return nil })
		p.Go(func(ctx context.Context) error { h.record("worker started"); return nil })
		return refused
	})
	if err := wait(done); !errors.Is(err, refused) {
		t.Fatalf("Run = %v, want %v", err, refused)
	}
	if got := h.recorded(); !slices.Equal(got, []string{"pool closed"}) {
		t.Errorf("events %q, want the pool closed and nothing run", got)
	}
	<-h.armed // the undoing is bounded too
}

// TestTakenPortStopsBeforeServing: every listener is bound before any
// serves, so a taken port stops the process with nothing started.
func TestTakenPortStopsBeforeServing(t *testing.T) {
	h := newHarness(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	done := h.run(context.Background(), 0, func(ctx context.Context, p *Process) error {
		p.Serve(&http.Server{Handler: http.NotFoundHandler()}, "127.0.0.1:0", time.Second)
		p.Ops(taken.Addr().String(), ops.Readiness{Timeout: time.Second}, nil)
		p.Await(func(ctx context.Context) error { h.record("checked"); return nil })
		p.Go(func(ctx context.Context) error { h.record("worker started"); return nil })
		p.Defer(func() error { h.record("undone"); return nil })
		return nil
	})
	err = wait(done)
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Fatalf("Run = %v, want the listen error", err)
	}
	if got := h.recorded(); !slices.Equal(got, []string{"undone"}) {
		t.Errorf("events %q, want only the undo", got)
	}
	select {
	case l := <-h.listening:
		t.Errorf("%+v served although the ops port was taken", l)
	default:
	}
}

func TestDeferCloseNamesWhatFailedToClose(t *testing.T) {
	h := newHarness(t)
	done := h.run(context.Background(), 0, func(ctx context.Context, p *Process) error {
		p.DeferClose("kafka writer", closer{errors.New("broker gone")})
		p.Go(func(ctx context.Context) error { return nil })
		return nil
	})
	if err := wait(done); err == nil || err.Error() != "test: close kafka writer: broker gone" {
		t.Errorf("Run = %v, want %q", err, "test: close kafka writer: broker gone")
	}
}

func TestExitCode(t *testing.T) {
	clock := errors.New("session clock is not UTC")
	codes := map[error]int{clock: 2}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{errors.New("anything"), 1},
		{fmt.Errorf("%w: %w", startup.ErrRefused, clock), 2},
		{errors.Join(errors.New("serve"), clock), 2},
	} {
		if got := exitCode(tc.err, codes); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

type closer struct{ err error }

func (c closer) Close() error { return c.err }

var _ io.Closer = closer{}

// capture is a slog handler that keeps the addresses of the "listening"
// lines, with the component of the logger that wrote them.
type capture struct {
	attrs     []slog.Attr
	listening chan<- listenLine
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }

func (c *capture) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "listening" {
		return nil
	}
	var l listenLine
	for _, a := range c.attrs {
		if a.Key == "component" {
			l.component = a.Value.String()
		}
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "addr" {
			l.addr = a.Value.String()
		}
		return true
	})
	c.listening <- l
	return nil
}

func (c *capture) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &capture{attrs: append(slices.Clone(c.attrs), attrs...), listening: c.listening}
}

func (c *capture) WithGroup(string) slog.Handler { return c }
