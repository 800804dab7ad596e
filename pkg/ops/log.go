// Package ops is what every deployable shares to be run: a JSON slog logger,
// liveness/readiness checks, the /metrics handler on an explicit registry,
// and a bounded graceful shutdown.
package ops

import (
	"log/slog"
	"os"
)

// NewLogger returns a JSON logger at level ("debug", "info", "warn", "error")
// tagged with the deployable's name.
func NewLogger(service, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by config
	h := slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})
	return slog.New(h).With("service", service)
}
