package testenv

import (
	"context"
	"net"
	"sync"
	"syscall"
	"time"
)

// FaultDialer dials real servers but lets a test cut or stall every
// connection it made, without touching the server other tests share. Plug it
// into kafka-go (kafka.Transport{Dial: fd.DialContext}) or the MySQL driver
// (mysql.RegisterDialContext) so even connections to addresses learned from
// metadata go through it.
type FaultDialer struct {
	mu      sync.Mutex
	mode    int // 0 ok, 1 refuse, 2 stall, 3 stall replies only
	changed chan struct{}
	conns   map[*faultConn]struct{}
	d       net.Dialer
}

// ErrCut is what a cut dialer returns: a refused connection, as clients
// see a server that is down.
var ErrCut error = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}

// NewFaultDialer returns a dialer in the healthy state.
func NewFaultDialer() *FaultDialer {
	return &FaultDialer{changed: make(chan struct{}), conns: map[*faultConn]struct{}{}}
}

// DialContext dials addr unless the dialer is cut; in the stalled state the
// connection is made but every read and write hangs until its deadline.
func (f *FaultDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	f.mu.Lock()
	mode := f.mode
	f.mu.Unlock()
	if mode == 1 {
		return nil, ErrCut
	}
	c, err := f.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	fc := &faultConn{Conn: c, f: f}
	f.mu.Lock()
	f.conns[fc] = struct{}{}
	f.mu.Unlock()
	return fc, nil
}

func (f *FaultDialer) set(mode int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode = mode
	close(f.changed)
	f.changed = make(chan struct{})
	if mode == 1 {
		for c := range f.conns {
			_ = c.Conn.Close()
		}
		f.conns = map[*faultConn]struct{}{}
	}
}

// Cut closes every connection and refuses new ones (a reset, an outage).
func (f *FaultDialer) Cut() { f.set(1) }

// Stall makes every read and write hang (a black-holed port): callers see
// timeouts, an ambiguous failure.
func (f *FaultDialer) Stall() { f.set(2) }

// LoseReplies lets every write through but makes every read hang: the
// server runs each command and its reply is lost, the most ambiguous
// failure a client can see (a slow server, a half-dead link).
func (f *FaultDialer) LoseReplies() { f.set(3) }

// Restore heals the dialer.
func (f *FaultDialer) Restore() { f.set(0) }

func (f *FaultDialer) state() (int, chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mode, f.changed
}

type faultConn struct {
	net.Conn
	f          *FaultDialer
	mu         sync.Mutex
	rdl, wdl   time.Time
	closedOnce sync.Once
	closed     chan struct{}
}

func (c *faultConn) closedCh() chan struct{} {
	c.closedOnce.Do(func() { c.closed = make(chan struct{}) })
	return c.closed
}

// hold blocks while the dialer stalls this direction (reads stall in modes
// 2 and 3, writes in mode 2), until restore, close or deadline.
func (c *faultConn) hold(read bool, deadline func() time.Time) error {
	for {
		mode, changed := c.f.state()
		if mode != 2 && !(read && mode == 3) {
			return nil
		}
		var timer <-chan time.Time
		if dl := deadline(); !dl.IsZero() {
			t := time.NewTimer(time.Until(dl))
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-changed:
		case <-c.closedCh():
			return net.ErrClosed
		case <-timer:
			return &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}
		}
	}
}

func (c *faultConn) Read(b []byte) (int, error) {
	if err := c.hold(true, func() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.rdl }); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *faultConn) Write(b []byte) (int, error) {
	if err := c.hold(false, func() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.wdl }); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

func (c *faultConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl, c.wdl = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *faultConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *faultConn) Close() error {
	select {
	case <-c.closedCh():
	default:
		close(c.closedCh())
	}
	c.f.mu.Lock()
	delete(c.f.conns, c)
	c.f.mu.Unlock()
	return c.Conn.Close()
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout (fault injection)" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
