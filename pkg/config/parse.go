package config

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
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
const FileSuffix = "_FILE"

// ApplyEnv sets every flag that was not given explicitly from its environment
// variable, as looked up by lookup, or from the file its _FILE variable
// names. Setting both is refused naming both; an unreadable file is
// refused naming the setting and the path. A value read from a file is
// never shown in an error: it is likely a secret.
func ApplyEnv(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	envs := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { envs[EnvName(f.Name)] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || explicit[f.Name] || cliOnly[f.Name] {
			return
		}
		name := EnvName(f.Name)
		v, ok := lookup(name)
		fileName := name + FileSuffix
		path, fromFile := "", false
		if !envs[fileName] { // a setting of that name would win
			path, fromFile = lookup(fileName)
		}
		switch {
		case ok && fromFile:
			err = fmt.Errorf("%w: %s and %s are both set (expected one of them)", ErrInvalid, name, fileName)
			return
		case fromFile:
			b, rerr := os.ReadFile(path)
			if rerr != nil {
				err = fmt.Errorf("%w: %s: cannot read %s: %v", ErrInvalid, fileName, path, unwrapPath(rerr))
				return
			}
			v = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		case !ok:
			return
		}
		if setErr := fs.Set(f.Name, v); setErr != nil {
			shown := redact(f.Name, v)
			if fromFile {
				err = fmt.Errorf("%w: %s (from %s %s): %v (expected %s)", ErrInvalid, name, fileName, path, redactErr(setErr, v), f.Usage)
				return
			}
			err = fmt.Errorf("%w: %s=%q: %v (expected %s)", ErrInvalid, name, shown, redactErr(setErr, shown, v), f.Usage)
		}
	})
	return err
}

// unwrapPath drops the *fs.PathError's own copy of the path, which the
// message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// redactErr is err's message with v replaced, unless v is what may be shown.
func redactErr(err error, shown string, v ...string) string {
	msg := err.Error()
	for _, s := range v {
		if s != "" && s != shown {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
		}
	}
	return msg
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

// redact hides the values of secret settings in error messages: secrets,
// passwords, DSNs and URLs (a Redis URL carries its password).
func redact(name, v string) string {
	if Secret(name) {
		return "<redacted>"
	}
	return v
}

// Secret reports whether the setting (flag or env name) holds a secret
// that no error or log may show.
func Secret(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"secret", "password", "dsn", "url"} {
		if strings.Contains(n, s) && !strings.Contains(n, "jwks") {
			return true
		}
	}
	return false
}
