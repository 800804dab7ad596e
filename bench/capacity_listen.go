package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// redisProcs selects the Redis server that serves addr (host:port) by the
// port it listens on: redis-server's command line names only its first
// (plain) port, so a selector on the command line found no process under
// the TLS settings (FLASHSALE_REDIS_URL on the TLS port) and measured Redis
// at 0 µs.
func redisProcs(addr string) procSelector {
	_, port, _ := strings.Cut(addr, ":")
	return procSelector{Kind: "listen", Value: port}
}

// listeners are the pids (as /proc names them) of the processes holding a
// listening TCP socket on port, on any address: the sockets' inodes from
// /proc/net/tcp and tcp6, then the processes whose descriptors point at
// one. The selector "listen:PORT" reads them, so Redis is found by the TLS
// port of FLASHSALE_REDIS_URL, which redis-server's command line (it shows
// the plain port) does not name.
func listeners(port string) []string {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, ino := range listenInodes(string(b), port) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	var pids []string
	for _, fd := range fds {
		l, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		ino, ok := strings.CutPrefix(l, "socket:[")
		if !ok || !inodes[strings.TrimSuffix(ino, "]")] {
			continue
		}
		pid := strings.Split(fd, "/")[2]
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// listenInodes are the inodes of the sockets in LISTEN state (st 0A) on
// port in a /proc/net/tcp table (local_address is HEXADDR:HEXPORT).
func listenInodes(table, port string) []string {
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(f[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != n {
			continue
		}
		out = append(out, f[9])
	}
	return out
}
