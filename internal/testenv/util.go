package testenv

import (
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/flashsale-dev/flashsale/pkg/config"
)

func flagSet() *flag.FlagSet { return flag.NewFlagSet("testenv", flag.ContinueOnError) }

// load fills c from its flags' defaults and the settings lookup gives (as
// config.Parse reads the environment), and validates it; the test fails
// with the setting that is wrong.
func load(t testing.TB, c config.Registerer, lookup func(string) (string, bool)) {
	t.Helper()
	fs := flagSet()
	c.RegisterFlags(fs)
	if err := config.ApplyEnv(fs, lookup); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
