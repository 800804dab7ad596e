package testenv

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ResetProxy is a TCP proxy in front of a real Redis that, once armed,
// forwards the next client write containing a marker (the command reaches
// Redis and runs), then resets every client connection before the reply
// reaches the client, and refuses new connections for a while (its
// listener closed): a primary whose connections are reset mid-reply while
// its writes survive, then briefly unreachable. The reply Redis sent is
// read and dropped.
type ResetProxy struct {
	t      testing.TB
	target string
	// Addr is where clients connect.
	Addr   string
	refuse time.Duration

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	marker []byte // armed when set
	closed bool
	resets atomic.Int64
	wg     sync.WaitGroup
}

// NewResetProxy starts a proxy to target (host:port) on a free loopback
// port; refuse is how long it refuses connections after each fault. It
// stops at the test's end.
func NewResetProxy(t testing.TB, target string, refuse time.Duration) *ResetProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ResetProxy{t: t, target: target, Addr: ln.Addr().String(), refuse: refuse, ln: ln, conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.close)
	return p
}

// Arm makes the next client write that contains marker the one to lose
// its reply.
func (p *ResetProxy) Arm(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker = []byte(marker)
}

// Resets is how many times the fault fired.
func (p *ResetProxy) Resets() int64 { return p.resets.Load() }

func (p *ResetProxy) serve(ln net.Listener) {
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.pipe(c) })
		}
	})
}

func (p *ResetProxy) pipe(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, client)
		p.mu.Unlock()
		client.Close()
		server.Close()
	}()
	// fired is closed when this connection's armed write went to Redis:
	// the reply is then dropped and the fault fired.
	fired := make(chan struct{})
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				// Marked before it is forwarded, so its reply is
				// certainly dropped.
				armed := p.take(buf[:n])
				if armed {
					close(fired)
				}
				if _, werr := server.Write(buf[:n]); werr != nil || armed {
					return
				}
			}
			if err != nil {
				server.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		select {
		case <-fired:
			// Redis ran the command and answered; the client never hears it.
			p.fire()
			return
		default:
		}
		if n > 0 {
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// take reports whether b carries the armed marker, disarming it.
func (p *ResetProxy) take(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marker == nil || !bytes.Contains(b, p.marker) {
		return false
	}
	p.marker = nil
	return true
}

// fire resets every client connection (RST: linger 0) and refuses new
// ones for p.refuse.
func (p *ResetProxy) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.resets.Add(1)
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
		time.AfterFunc(p.refuse, p.reopen)
	}
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
	}
}

func (p *ResetProxy) reopen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ln != nil {
		return
	}
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		p.t.Errorf("reset proxy: listen again on %s: %v", p.Addr, err)
		return
	}
	p.ln = ln
	p.serve(ln)
}

func (p *ResetProxy) close() {
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		p.ln.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
