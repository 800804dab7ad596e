// Package config is the one place where flashsale's settings are declared.
//
// Every setting is a command-line flag whose default can come from an
// environment variable: flag "mysql-dsn" reads FLASHSALE_MYSQL_DSN. A flag given
// on the command line wins over the environment. A bad value stops start-up with
// one line that names the setting and the expected form (see Parse).
//
// Each deployable embeds Common plus its own component struct; every struct has
// RegisterFlags(*flag.FlagSet) and Validate() error, in the style of dskit.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

// EnvPrefix is prepended to the upper-snake-case flag name to find its
// environment variable.
const EnvPrefix = "FLASHSALE_"

// EnvName returns the environment variable that backs flag name.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Registerer is a component configuration.
type Registerer interface {
	RegisterFlags(fs *flag.FlagSet)
	Validate() error
}

// ErrInvalid marks every configuration error, so callers can tell a bad setting
// (exit code 2) from a runtime failure.
var ErrInvalid = errors.New("invalid configuration")

// Parse registers the components' flags on fs, parses args, fills flags not
// given on the command line from their FLASHSALE_* variables, and validates.
// The returned error is a single line naming the offending setting.
func Parse(fs *flag.FlagSet, args []string, components ...Registerer) error {
	for _, c := range components {
		c.RegisterFlags(fs)
	}
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
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

// ApplyEnv sets every flag that was not given explicitly from its environment
// variable, as looked up by lookup.
func ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || explicit[f.Name] {
			return
		}
		v, ok := lookup(EnvName(f.Name))
		if !ok {
			return
		}
		if setErr := fs.Set(f.Name, v); setErr != nil {
			err = fmt.Errorf("%w: %s=%q: %v (expected %s)", ErrInvalid, EnvName(f.Name), redact(f.Name, v), setErr, f.Usage)
		}
	})
	return err
}

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

// redact hides the values of secret settings in error messages.
func redact(name, v string) string {
	if strings.Contains(name, "secret") || strings.Contains(name, "dsn") {
		return "<redacted>"
	}
	return v
}
