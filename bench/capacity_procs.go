package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A procSelector names the processes whose CPU is one component's:
// "comm:NAME[|NAME]" (command names), "cmd:TEXT" (java and others whose
// command name says nothing: a command-line substring), "listen:PORT" (the
// processes listening on TCP port PORT: a server found by the address its
// clients use, which its command line need not show), "pid:N", "self"
// (this process: the load generator, or a pipeline run in-process by a
// test) or "none" (remote, not measured here). Reading /proc is what makes
// the costs CPU, not wall time: a component waiting for another costs
// nothing.
type procSelector struct {
	Kind, Value string
}

// parseProcSelector reads one selector.
func parseProcSelector(s string) (procSelector, error) {
	if s == "self" || s == "none" {
		return procSelector{Kind: s}, nil
	}
	kind, value, ok := strings.Cut(s, ":")
	if !ok || value == "" {
		return procSelector{}, fmt.Errorf("capacity: process selector %q: expected comm:NAME, cmd:TEXT, listen:PORT, pid:N, self or none", s)
	}
	switch kind {
	case "comm", "cmd":
	case "pid":
		if _, err := strconv.Atoi(value); err != nil {
			return procSelector{}, fmt.Errorf("capacity: process selector %q: %w", s, err)
		}
	case "listen":
		if n, err := strconv.Atoi(value); err != nil || n < 1 || n > 65535 {
			return procSelector{}, fmt.Errorf("capacity: process selector %q: expected a TCP port", s)
		}
	default:
		return procSelector{}, fmt.Errorf("capacity: process selector %q: unknown kind %q", s, kind)
	}
	return procSelector{Kind: kind, Value: value}, nil
}

// measured says whether the selector reads anything on this machine.
func (p procSelector) measured() bool { return p.Kind != "none" }

// cpu is the user+system CPU seconds so far of the selected processes.
func (p procSelector) cpu() float64 {
	switch p.Kind {
	case "self":
		return selfCPU()
	case "pid":
		return pidCPU(p.Value)
	case "listen":
		var sum float64
		for _, pid := range listeners(p.Value) {
			sum += pidCPU(pid)
		}
		return sum
	case "comm":
		names := strings.Split(p.Value, "|")
		return procCPU(func(comm, _ string) bool {
			for _, n := range names {
				if comm == n {
					return true
				}
			}
			return false
		})
	case "cmd":
		return procCPU(func(_, cmdline string) bool {
			return strings.Contains(strings.ReplaceAll(cmdline, "\x00", " "), p.Value)
		})
	}
	return 0
}

// pidCPU is process pid's user+system CPU seconds so far; 0 once it is gone.
func pidCPU(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	_, cpu := statCPU(string(b))
	return cpu
}

// statCPU reads a /proc/PID/stat line: the command name and the user+system
// CPU seconds (USER_HZ is 100 on Linux); comm is "" for a malformed line.
func statCPU(s string) (comm string, cpu float64) {
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0
	}
	f := strings.Fields(s[closing+1:])
	if len(f) < 13 {
		return "", 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return s[open+1 : closing], (u + st) / 100
}
