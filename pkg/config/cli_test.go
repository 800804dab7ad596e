package config

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

type noSettings struct{ n int }

func (s *noSettings) RegisterFlags(fs *flag.FlagSet) { fs.IntVar(&s.n, "n", 1, "a number") }
func (s *noSettings) Validate() error                { return nil }

func TestHelpIsNotAnInvalidConfiguration(t *testing.T) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	err := Parse(fs, []string{"-h"}, &noSettings{})
	if !errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrInvalid) {
		t.Fatalf("Parse(-h) = %v, want flag.ErrHelp and not ErrInvalid", err)
	}
	var out bytes.Buffer
	if code := exitCode(fs.Name(), err, &out); code != 0 || out.Len() != 0 {
		t.Fatalf("-h: exit %d with %q, want 0 and nothing more than the usage", code, out.String())
	}
}

func TestVersionPrintsTheBuildAndExitsZero(t *testing.T) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	err := Parse(fs, []string{"-version"}, &noSettings{})
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("Parse(-version) = %v, want ErrVersion", err)
	}
	var out bytes.Buffer
	if code := exitCode(fs.Name(), err, &out); code != 0 || !strings.HasPrefix(out.String(), "cmd ") || !strings.Contains(out.String(), "revision") {
		t.Fatalf("-version: exit %d with %q, want 0 and the build line", code, out.String())
	}
}

func TestVersionIsNotReadFromTheEnvironment(t *testing.T) {
	t.Setenv("FLASHSALE_VERSION", "v9.9.9") // a deployment's own variable, not our flag
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	if err := Parse(fs, nil, &noSettings{}); err != nil {
		t.Fatalf("Parse with FLASHSALE_VERSION set: %v, want nil", err)
	}
}

func TestABadSettingExitsTwoWithOneLine(t *testing.T) {
	fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
	fs.SetOutput(&bytes.Buffer{})
	err := Parse(fs, []string{"-n", "x"}, &noSettings{})
	var out bytes.Buffer
	if code := exitCode(fs.Name(), err, &out); code != 2 || strings.Count(out.String(), "\n") != 1 || !strings.HasPrefix(out.String(), "cmd: invalid configuration") {
		t.Fatalf("bad -n: exit %d with %q, want 2 and one line", code, out.String())
	}
}
