package ops

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServePprof serves the runtime profiles on addr until ctx is done; an empty
// addr does nothing. It has its own listener so profiles are never reachable
// through the public API port. Failures are logged, never fatal: profiling
// is a diagnostic, not a duty.
func ServePprof(ctx context.Context, addr string, log *slog.Logger) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := Serve(ctx, srv, addr, time.Second, log.With("component", "pprof")); err != nil {
			log.Warn("pprof server stopped", "err", err)
		}
	}()
}
