// Package ops is what every deployable shares to be run: a JSON slog logger,
// liveness/readiness checks, the /metrics handler on an explicit registry,
// and a bounded graceful shutdown.
//
// It owns the ops routes (/healthz, /readyz, /metrics), the readiness prober
// and its cache, the flashsale_dependency_up gauge, the metrics registry every
// deployable builds (NewRegistry, with the Go, process and build-info
// collectors) and the pprof listener.
//
// Importers: pkg/service and the setup command, which run processes,
// pkg/startup (WaitFor, WatchDependencies) and pkg/httpapi (its
// readiness checks). It imports only pkg/buildinfo and pkg/logsample, never a
// store client: a check is a func handed in by the caller, so the same prober
// serves every deployable whatever stores it has.
package ops
