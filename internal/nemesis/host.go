package nemesis

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"time"
)

// Host is one network namespace on the network, with one interface (eth0)
// and one address.
type Host struct {
	Name string
	// NS is the namespace's name (ip netns), Veth the root end of its pair.
	NS   string
	Veth string
	IP   netip.Addr
	net  *Network
}

// Host returns the host called name, making it on first use; an error is
// fatal to the test (a network made with Open: use AddHost).
func (n *Network) Host(name string) *Host {
	if n.t != nil {
		n.t.Helper()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := n.AddHost(ctx, name)
	if err != nil {
		if n.t == nil {
			panic(err)
		}
		n.t.Fatalf("nemesis: %v", err)
	}
	return h
}

// AddHost returns the host called name, making it on first use: a
// namespace with loopback up and eth0 (one end of a veth pair whose other
// end is on the bridge) holding the next free address of the subnet.
func (n *Network) AddHost(ctx context.Context, name string) (*Host, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, fmt.Errorf("network %s is closed", n.name)
	}
	for _, h := range n.hosts {
		if h.Name == name {
			return h, nil
		}
	}
	i := len(n.hosts) + 1
	if i > 250 {
		return nil, fmt.Errorf("network %s is full", n.name)
	}
	ip := n.gw
	for range i {
		ip = ip.Next()
	}
	h := &Host{Name: name, NS: n.nsPrefix() + name, Veth: n.vethPrefix() + strconv.Itoa(i), IP: ip, net: n}
	peer := h.Veth + "p"
	err := runAll(ctx,
		[]string{"ip", "netns", "add", h.NS},
		[]string{"ip", "-n", h.NS, "link", "set", "lo", "up"},
		[]string{"ip", "link", "add", h.Veth, "type", "veth", "peer", "name", peer},
		[]string{"ip", "link", "set", peer, "netns", h.NS},
		[]string{"ip", "-n", h.NS, "link", "set", peer, "name", "eth0"},
		[]string{"ip", "-n", h.NS, "addr", "add", ip.String() + "/24", "dev", "eth0"},
		[]string{"ip", "-n", h.NS, "link", "set", "eth0", "up"},
		[]string{"ip", "-n", h.NS, "route", "add", "default", "via", n.gw.String()},
		[]string{"ip", "link", "set", h.Veth, "master", n.bridge},
		[]string{"ip", "link", "set", h.Veth, "up"},
	)
	if err != nil {
		_ = run(context.Background(), "ip", "link", "del", h.Veth)
		_ = run(context.Background(), "ip", "netns", "del", h.NS)
		return nil, fmt.Errorf("host %s: %w", name, err)
	}
	n.hosts = append(n.hosts, h)
	return h, nil
}

// Command is name run inside the host (ip netns exec, which execs: the
// process's pid is the command's). Close kills it if it still runs.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// Addr is host:port on the host's address.
func (h *Host) Addr(port int) string { return net.JoinHostPort(h.IP.String(), strconv.Itoa(port)) }

func (h *Host) String() string { return h.Name + "(" + h.IP.String() + ")" }

// exec runs one command in the host and returns its error with its output.
func (h *Host) exec(ctx context.Context, name string, args ...string) error {
	return run(ctx, "ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}
