package nemesis

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Listen opens a listener inside the host (for a server the test itself
// runs there, such as an echo server).
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := h.inside(func() (err error) { ln, err = net.Listen(network, addr); return })
	return ln, err
}

// ListenPacket is Listen for a datagram socket.
func (h *Host) ListenPacket(network, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := h.inside(func() (err error) { pc, err = net.ListenPacket(network, addr); return })
	return pc, err
}

// DialContext connects from inside the host.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.inside(func() (err error) { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return })
	return c, err
}

// inside runs fn on a thread switched into the host's namespace: a socket
// made there stays in that namespace. The thread goes back to the
// process's namespace afterwards; if it cannot, it stays locked and is
// never used again.
func (h *Host) inside(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer self.Close()
		target, err := os.Open("/var/run/netns/" + h.NS)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", h.NS, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}
