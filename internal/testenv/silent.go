package testenv

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// SilentServer is a TCP server that accepts every connection, reads what it
// is sent and never answers: a broker that was SIGSTOPped or a peer whose
// replies are lost, without touching the shared servers.
type SilentServer struct {
	// Addr is the host:port to dial.
	Addr string
	open atomic.Int64
	stop func()
}

// Stop closes the listener and every connection (also done when the test
// ends; call it earlier to release what is blocked on the server, e.g.
// before closing an httptest.Server whose handlers wait on it).
func (s *SilentServer) Stop() { s.stop() }

// Open is the number of connections the clients have not closed yet.
func (s *SilentServer) Open() int64 { return s.open.Load() }

// Silent starts a SilentServer, stopped when the test ends.
func Silent(t testing.TB) *SilentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: silent listener: %v", err)
	}
	s := &SilentServer{Addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			s.open.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer s.open.Add(-1)
				_, _ = io.Copy(io.Discard, c) // until the client closes (or cleanup)
			}()
		}
	}()
	s.stop = sync.OnceFunc(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	t.Cleanup(s.stop)
	return s
}
