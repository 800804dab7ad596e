package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/flashsale-dev/flashsale/pkg/buildinfo"
	"github.com/flashsale-dev/flashsale/pkg/config/internal/envflag"
)

// ErrVersion is what Parse returns for -version: not a failure, the caller
// prints the build and exits 0 (Exit does both).
var ErrVersion = errors.New("version requested")

// versionFlag is every command's -version. It is a command-line flag only:
// FLASHSALE_VERSION is a name deployments use for their own purposes, and
// reading it would turn "v1.2" into a start-up error (ApplyEnv skips it).
const versionFlag = envflag.Version

// Exit is the exit status of a command whose Parse returned err, after
// printing what the user asked for: -h has printed the usage (0), -version
// prints the build (0), anything else is one line naming the setting (2).
//
//	if err := config.Parse(fs, os.Args[1:], &common, &own); err != nil {
//		os.Exit(config.Exit(fs, err))
//	}
func Exit(fs *flag.FlagSet, err error) int {
	out := io.Writer(os.Stderr)
	if errors.Is(err, ErrVersion) {
		out = os.Stdout
	}
	return exitCode(fs.Name(), err, out)
}

func exitCode(cmd string, err error, out io.Writer) int {
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0 // the flag package printed the usage
	case errors.Is(err, ErrVersion):
		fmt.Fprintln(out, buildinfo.Get().String(cmd))
		return 0
	default:
		fmt.Fprintf(out, "%s: %v\n", cmd, err)
		return 2
	}
}
