// Package service is how a long-running deployable (ingress, consumer,
// reaper) is run, written once: its settings parsed (pkg/config), its JSON
// logger, tracing from the OTEL_* environment (flushed last), SIGINT and
// SIGTERM, the stores opened and refused on a bad login (Open), the ops
// listener (/healthz, /readyz, /metrics) and pprof, the start-up checks
// that wait for the stores with the listeners up and refuse an unfit one
// (pkg/startup), the workers started once they pass, and a shutdown bounded
// by FLASHSALE_SHUTDOWN_TIMEOUT: every task stops when one does, then what
// was deferred is undone in reverse, then the process exits 0, 1, 3 past
// the bound, or the code a deployable gives its own error.
//
// A main.go builds its parts in a Setup and declares them on the Process
// (Serve, Ops, Await, Go, Defer); the runner does the rest, so each main
// reads as the list of what that process runs. Only the commands' mains
// import this package. It imports the plumbing every deployable shares
// (config, ops, startup, tracing, schema for the migration check, and the
// store clients of store, stock and orderlog), and of the features that run
// Lua over the shared Redis client only their LoadScripts, to preload their
// scripts with the ledger's (waitroom, orderstatus, stockchange). It never imports a
// feature's work (httpapi, admission, orderwriter, reap, rebalance, auditor,
// ...): those are what the mains hand it. The one-shot setup command does not
// use it: it serves nothing, runs no workers and is bounded by
// FLASHSALE_WAIT, not by a shutdown.
package service
