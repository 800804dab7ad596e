package ops

import (
	"log/slog"
	"os"

	"github.com/flashsale-dev/flashsale/pkg/logsample"
)

// NewLogger returns a JSON logger at level ("debug", "info", "warn", "error")
// tagged with the deployable's name. At most burst lines of one warning or
// error message are written per second, the rest counted in a summary line
// (pkg/logsample: an outage at sale rates must not cost a line per
// request); burst 0 writes every line.
func NewLogger(service, level string, burst int) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by config
	h := logsample.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}), logsample.Options{Burst: burst})
	return slog.New(h).With("service", service)
}
