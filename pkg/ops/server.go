package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"time"

	"github.com/flashsale-dev/flashsale/pkg/buildinfo"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry with the Go runtime and process collectors
// and deployable's flashsale_build_info, built in main and handed to every
// component (no global state).
func NewRegistry(deployable string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildinfo.Collector(deployable))
	return reg
}

// Mux returns the ops routes: /healthz, /readyz, /metrics.
func Mux(reg *prometheus.Registry, ready Readiness) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", LivenessHandler())
	mux.Handle("GET /readyz", ReadinessHandler(ready))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}

// Serve runs srv on addr until ctx is done, then shuts it down within
// shutdownTimeout, letting in-flight requests finish.
func Serve(ctx context.Context, srv *http.Server, addr string, shutdownTimeout time.Duration, log *slog.Logger) error {
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	return ServeListener(ctx, srv, ln, shutdownTimeout, log)
}

// Listen opens addr for ServeListener: a deployable with two listeners
// binds both before it serves either, so a taken port stops it before it
// answers anything.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ops: listen %s: %w", addr, err)
	}
	return ln, nil
}

// ServeListener is Serve on a listener already open; it closes ln.
func ServeListener(ctx context.Context, srv *http.Server, ln net.Listener, shutdownTimeout time.Duration, log *slog.Logger) error {
	addr := ln.Addr().String()
	log.Info("listening", "addr", addr)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("ops: serve %s: %w", addr, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("ops: shutdown %s: %w", addr, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ExitAfter bounds shutdown: if the process has not returned from main
// within d after ctx is done, it dumps all goroutines and exits 3, so a stuck
// dependency can never keep a replica half-alive.
func ExitAfter(ctx context.Context, d time.Duration, log *slog.Logger) {
	go func() {
		<-ctx.Done()
		time.Sleep(d)
		log.Error("shutdown deadline exceeded; dumping goroutines", "deadline", d.String())
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		os.Exit(3)
	}()
}
