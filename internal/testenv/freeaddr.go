package testenv

import (
	"net"
	"sync"
	"testing"
)

// handedOut is every port FreeAddr has returned in this process. A port is
// free again the moment its probe listener closes, so two calls in a row
// can get the same one from the kernel: a fault-suite pipeline picks every
// deployable's addresses before it starts any, and a cold make test once
// gave two of them one port (consumer-0 "bind: address already in use",
// its health check answered by the other process's ops server).
var handedOut sync.Map

// FreeAddr returns a loopback host:port that was free a moment ago and that
// no earlier call of this process returned, for a process the test starts
// to listen on. (Another process may still take it in between; the ports
// are the kernel's ephemeral ones, so that is rare.)
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if _, dup := handedOut.LoadOrStore(addr, true); !dup {
			return addr
		}
	}
	t.Fatal("testenv: no fresh loopback port in 100 tries")
	return ""
}
