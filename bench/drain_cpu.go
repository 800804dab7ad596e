package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// selfCPU is this process' user+system CPU seconds so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// mariadbCPU is the CPU seconds so far of the local mariadbd (or mysqld)
// process, read from /proc; 0 when there is none (a remote server).
func mariadbCPU() float64 {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		if comm := s[open+1 : closing]; comm != "mariadbd" && comm != "mysqld" {
			continue
		}
		f := strings.Fields(s[closing+1:])
		if len(f) < 13 {
			continue
		}
		// Fields after the command: state is [0], utime [11], stime [12].
		u, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		return (u + st) / 100 // USER_HZ is 100 on Linux
	}
	return 0
}
