package main

import (
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
	return procCPU(func(comm, _ string) bool { return comm == "mariadbd" || comm == "mysqld" })
}
