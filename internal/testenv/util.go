package testenv

import (
	"flag"
	"io"
	"log/slog"
)

func flagSet() *flag.FlagSet { return flag.NewFlagSet("testenv", flag.ContinueOnError) }

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
