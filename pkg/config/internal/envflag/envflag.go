package envflag

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Prefix is prepended to the upper-snake-case flag name to find its
// environment variable.
const Prefix = "FLASHSALE_"

// Name returns the environment variable that backs flag name.
func Name(flagName string) string {
	return Prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ErrInvalid marks every configuration error, so callers can tell a bad setting
// (exit code 2) from a runtime failure.
var ErrInvalid = errors.New("invalid configuration")

// FileSuffix marks the variant of a setting read from a file:
// FLASHSALE_X_FILE=/path sets FLASHSALE_X to the file's contents, one
// trailing newline trimmed (Kubernetes mounts Secrets as files).
const FileSuffix = "_FILE"

// Version is every command's -version (pkg/config registers it). It is a
// command-line flag only: FLASHSALE_VERSION is a name deployments use for
// their own purposes, and reading it would turn "v1.2" into a start-up error.
const Version = "version"

// cliOnly lists the flags Apply never reads from the environment.
var cliOnly = map[string]bool{Version: true}

// Apply sets every flag that was not given explicitly from its environment
// variable, as looked up by lookup, or from the file its _FILE variable
// names. Setting both is refused naming both; an unreadable file is
// refused naming the setting and the path. A value read from a file is
// never shown in an error: it is likely a secret.
func Apply(fs *flag.FlagSet, lookup func(string) (string, bool)) error {
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	envs := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { envs[Name(f.Name)] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || explicit[f.Name] || cliOnly[f.Name] {
			return
		}
		name := Name(f.Name)
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
