package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cpuSplit is CPU seconds so far of the processes a drain shares the
// machine with, read from /proc, and of the whole machine. On two cores the
// order writers, MariaDB, Kafka and Redis take from the same 2 s per
// second; the split says which of them a drain waited for, and Other
// (busy minus the rest) shows load that is not the drain's.
type cpuSplit struct {
	Bench, MariaDB, Kafka, Redis float64
	// Busy and IOWait are the machine's, over all cores.
	Busy, IOWait float64
}

// readCPUSplit reads the split now; Redis is the server listening on
// redisAddr's port (redisProcs; other tests' private servers count as
// other).
func readCPUSplit(redisAddr string) cpuSplit {
	s := cpuSplit{Bench: selfCPU(), MariaDB: mariadbCPU()}
	s.Kafka = procCPU(func(comm, cmdline string) bool { return comm == "java" && strings.Contains(cmdline, "kafka") })
	s.Redis = redisProcs(redisAddr).cpu()
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		// cpu user nice system idle iowait irq softirq steal ...
		for i := 1; i < len(f) && i <= 8; i++ {
			v, _ := strconv.ParseFloat(f[i], 64)
			switch i {
			case 4:
			case 5:
				s.IOWait += v / 100
			default:
				s.Busy += v / 100
			}
		}
	}
	return s
}

func (s cpuSplit) minus(o cpuSplit) cpuSplit {
	return cpuSplit{Bench: s.Bench - o.Bench, MariaDB: s.MariaDB - o.MariaDB, Kafka: s.Kafka - o.Kafka, Redis: s.Redis - o.Redis,
		Busy: s.Busy - o.Busy, IOWait: s.IOWait - o.IOWait}
}

// write prints the split over secs of wall time, in % of one core.
func (s cpuSplit) write(w io.Writer, secs float64) {
	pc := func(v float64) float64 { return 100 * v / secs }
	other := s.Busy - s.Bench - s.MariaDB - s.Kafka - s.Redis
	fmt.Fprintf(w, "  machine while whole: %.0f%% of 200%% busy (bench %.0f%%, MariaDB %.0f%%, Kafka %.0f%%, Redis %.0f%%, other %.0f%%), iowait %.0f%%\n",
		pc(s.Busy), pc(s.Bench), pc(s.MariaDB), pc(s.Kafka), pc(s.Redis), pc(other), pc(s.IOWait))
}

// procCPU is the user+system CPU seconds so far of every process match
// accepts by its command name and command line.
func procCPU(match func(comm, cmdline string) bool) float64 {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var sum float64
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		comm, cpu := statCPU(string(b))
		if comm == "" {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		if match(comm, string(cmd)) {
			sum += cpu
		}
	}
	return sum
}
