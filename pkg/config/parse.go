package config

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/flashsale-dev/flashsale/pkg/config/internal/envflag"
)

// EnvPrefix is prepended to the upper-snake-case flag name to find its
// environment variable.
const EnvPrefix = envflag.Prefix

// EnvName returns the environment variable that backs flag name.
func EnvName(flagName string) string { return envflag.Name(flagName) }

// Registerer is a component configuration.
type Registerer interface {
	RegisterFlags(fs *flag.FlagSet)
	Validate() error
}

// ErrInvalid marks every configuration error, so callers can tell a bad setting
// (exit code 2) from a runtime failure.
var ErrInvalid = envflag.ErrInvalid

// Parse registers the components' flags on fs, parses args, fills flags not
// given on the command line from their FLASHSALE_* variables, and validates.
// The returned error is a single line naming the offending setting, wrapping
// ErrInvalid; -h returns flag.ErrHelp (the usage printed) and -version
// ErrVersion. Exit turns each into a command's exit status.
func Parse(fs *flag.FlagSet, args []string, components ...Registerer) error {
	for _, c := range components {
		c.RegisterFlags(fs)
	}
	version := fs.Bool(versionFlag, false, "print the build (version, revision, Go) and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err // asked for, not a bad setting: exit 0
		}
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if *version {
		return ErrVersion
	}
	if err := ApplyEnv(fs, os.LookupEnv); err != nil {
		return err
	}
	for _, c := range components {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	if err := validateAcross(components); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// FileSuffix marks the variant of a setting read from a file:
// FLASHSALE_X_FILE=/path sets FLASHSALE_X to the file's contents, one
// trailing newline trimmed (Kubernetes mounts Secrets as files).
const FileSuffix = envflag.FileSuffix

// ApplyEnv sets every flag that was not given explicitly from its environment
// variable, as looked up by lookup, or from the file its _FILE variable
// names. Setting both is refused naming both; an unreadable file is
// refused naming the setting and the path. A value read from a file is
// never shown in an error: it is likely a secret. (The reading is
// internal/envflag's, shared with pkg/config/jwtconfig.)
func ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	return envflag.Apply(fs, lookup)
}

// trackedString is a string flag that remembers whether it was set (by
// the command line or the environment), so "both set" can be told from a
// default.
type trackedString struct {
	p   *string
	set bool
}

func (t *trackedString) String() string {
	if t == nil || t.p == nil {
		return ""
	}
	return *t.p
}

func (t *trackedString) Set(v string) error { *t.p, t.set = v, true; return nil }

// Names lists the environment variables of every flag the components
// register, each once. The compose.yaml test uses it to check that compose
// sets only real settings.
func Names(components ...Registerer) []string {
	seen := map[string]bool{}
	var names []string
	for _, c := range components {
		// One flag set per component: two deployables may share a flag name
		// (metrics-addr), never one binary.
		fs := flag.NewFlagSet("names", flag.ContinueOnError)
		c.RegisterFlags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if n := EnvName(f.Name); !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		})
	}
	return names
}

// Secret reports whether the setting (flag or env name) holds a secret
// that no error or log may show.
func Secret(name string) bool { return envflag.Secret(name) }
