package nemesis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Network is one test network: a bridge and the hosts joined to it.
type Network struct {
	name   string
	bridge string
	prefix netip.Prefix
	gw     netip.Addr
	t      testing.TB // nil when made with Open
	logf   func(format string, args ...any)

	mu     sync.Mutex
	hosts  []*Host
	faults map[*Fault]bool
	nextQ  uint16
	closed bool
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9]{0,7}$`)

// New makes the network name for a test and removes it when the test ends;
// any error is fatal to the test.
func New(t testing.TB, name string) *Network {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Open(ctx, name)
	if err != nil {
		t.Fatalf("nemesis: %v", err)
	}
	n.t, n.logf = t, t.Logf
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("nemesis: close %s: %v", name, err)
		}
	})
	return n
}

// Open makes the network name (1-8 lower-case letters and digits, unique
// among the networks in use on the machine at once): it removes what an
// earlier run of the same name left, picks a free /24 and creates the
// bridge. The caller must Close it.
func Open(ctx context.Context, name string) (*Network, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("network name %q: want 1-8 lower-case letters and digits", name)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (network namespaces, nftables)")
	}
	for _, tool := range []string{"ip", "nft", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%s not installed (deploy/local/stack.sh up installs it): %w", tool, err)
		}
	}
	n := &Network{name: name, bridge: "nm" + name + ".br", faults: map[*Fault]bool{}, logf: func(string, ...any) {}}
	if err := n.removeLeftovers(ctx); err != nil {
		return nil, fmt.Errorf("remove leftovers of %s: %w", name, err)
	}
	prefix, err := freePrefix(ctx, name)
	if err != nil {
		return nil, err
	}
	n.prefix, n.gw = prefix, prefix.Addr().Next()
	if err := run(ctx, "ip", "link", "add", n.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	if err := runAll(ctx,
		[]string{"ip", "addr", "add", n.gw.String() + "/24", "dev", n.bridge},
		[]string{"ip", "link", "set", n.bridge, "up"},
	); err != nil {
		_ = run(context.Background(), "ip", "link", "del", n.bridge)
		return nil, err
	}
	return n, nil
}

// Name is the network's name; Prefix its subnet; Gateway the root
// namespace's address on it (where a host reaches a server the test runs).
func (n *Network) Name() string         { return n.name }
func (n *Network) Prefix() netip.Prefix { return n.prefix }
func (n *Network) Gateway() netip.Addr  { return n.gw }
func (n *Network) nsPrefix() string     { return "nm-" + n.name + "-" }
func (n *Network) vethPrefix() string   { return "nm" + n.name + "." }
func (n *Network) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// Heal ends every fault now.
func (n *Network) Heal() error {
	n.mu.Lock()
	fs := make([]*Fault, 0, len(n.faults))
	for f := range n.faults {
		fs = append(fs, f)
	}
	n.mu.Unlock()
	var errs []error
	for _, f := range fs {
		errs = append(errs, f.Heal())
	}
	return errors.Join(errs...)
}

// Close heals every fault, kills the processes inside the hosts and
// deletes the hosts and the bridge. It is idempotent.
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	err := n.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return errors.Join(err, n.removeLeftovers(ctx))
}

// removeLeftovers kills the processes in this network's namespaces and
// deletes the namespaces, their veths and the bridge: everything named
// with this network's prefixes, whoever made it.
func (n *Network) removeLeftovers(ctx context.Context) error {
	out, err := output(ctx, "ip", "netns", "list")
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		ns, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !strings.HasPrefix(ns, n.nsPrefix()) {
			continue
		}
		errs = append(errs, killAll(ctx, ns), run(ctx, "ip", "netns", "del", ns))
	}
	links, err := output(ctx, "ip", "-o", "link", "show")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(links, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.HasPrefix(name, n.vethPrefix()) {
			// A veth whose namespace end was just deleted goes by itself.
			if err := run(ctx, "ip", "link", "del", name); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// killAll SIGKILLs every process in namespace ns and waits (bounded) until
// none is left: a process started with Host.Command is the test's child,
// reaped by whoever waits for it.
func killAll(ctx context.Context, ns string) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := output(ctx, "ip", "netns", "pids", ns)
		if err != nil {
			return err
		}
		pids := slices.DeleteFunc(strings.Fields(out), func(p string) bool { return p == strconv.Itoa(os.Getpid()) })
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in %s after SIGKILL", pids, ns)
		}
		for _, p := range pids {
			var pid int
			// Never this process: one of its threads may be in ns
			// (Host.inside) and ip netns pids lists it by its main one.
			if _, err := fmt.Sscan(p, &pid); err == nil && pid > 1 && pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePrefix picks a 10.x.y.0/24 (x in 200-249, from the name's hash) that
// overlaps no address or route on the machine, trying others on a clash.
func freePrefix(ctx context.Context, name string) (netip.Prefix, error) {
	used, err := usedPrefixes(ctx)
	if err != nil {
		return netip.Prefix{}, err
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	start := h.Sum32()
	for i := range uint32(50 * 256) {
		k := (start + i) % (50 * 256)
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(200 + k/256), byte(k % 256), 0}), 24)
		if !overlapsAny(p, used) {
			return p, nil
		}
	}
	return netip.Prefix{}, errors.New("no free 10.200-249.x.0/24")
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if u.Bits() > 0 && p.Overlaps(u) {
			return true
		}
	}
	return false
}

// usedPrefixes is every IPv4 address's subnet and every route's
// destination on the machine (the default route excepted).
func usedPrefixes(ctx context.Context) ([]netip.Prefix, error) {
	var out []netip.Prefix
	addrs, err := output(ctx, "ip", "-o", "-4", "addr", "show")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(addrs, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "inet" {
				if p, err := netip.ParsePrefix(f[i+1]); err == nil {
					out = append(out, p.Masked())
				}
			}
		}
	}
	routes, err := output(ctx, "ip", "-4", "route", "show", "table", "all")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(routes, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if dst == "local" || dst == "broadcast" || dst == "unicast" {
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if p, err := netip.ParsePrefix(dst); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out, nil
}

// run runs one command, its output in the error.
func run(ctx context.Context, name string, args ...string) error {
	_, err := output(ctx, name, args...)
	return err
}

func runAll(ctx context.Context, cmds ...[]string) error {
	for _, c := range cmds {
		if err := run(ctx, c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
