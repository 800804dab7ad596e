package testenv

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback host:port that was free a moment ago, for a
// process the test starts to listen on. (Another process may take it in
// between; the ports are the kernel's ephemeral ones, so that is rare.)
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
