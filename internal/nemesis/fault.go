package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Fault is one injected fault. It heals itself when its duration ends;
// Heal ends it sooner. Healing twice is a no-op.
type Fault struct {
	What  string
	Start time.Time

	net   *Network
	once  sync.Once
	timer *time.Timer
	heal  func(context.Context) error
	err   error
	done  chan struct{}
}

// Heal removes the fault now (idempotent) and returns the error of the one
// removal.
func (f *Fault) Heal() error {
	f.once.Do(func() {
		// timer is set under net.mu (arm), and the timer's own callback
		// may get here first: read it under the same lock.
		f.net.mu.Lock()
		t := f.timer
		f.net.mu.Unlock()
		if t != nil {
			t.Stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		f.err = f.heal(ctx)
		f.net.mu.Lock()
		delete(f.net.faults, f)
		f.net.mu.Unlock()
		f.net.logf("nemesis: healed %s after %v", f.What, time.Since(f.Start).Round(time.Millisecond))
		close(f.done)
	})
	return f.err
}

// Healed is closed once the fault is gone.
func (f *Fault) Healed() <-chan struct{} { return f.done }

// arm registers a fault that has just been put in place and schedules its
// self-healing after d.
func (n *Network) arm(what string, d time.Duration, heal func(context.Context) error) (*Fault, error) {
	if d <= 0 {
		_ = heal(context.Background())
		return nil, fmt.Errorf("%s: duration %v: every fault must be bounded", what, d)
	}
	f := &Fault{What: what, Start: time.Now(), net: n, heal: heal, done: make(chan struct{})}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		_ = heal(context.Background())
		return nil, fmt.Errorf("network %s is closed", n.name)
	}
	n.faults[f] = true
	f.timer = time.AfterFunc(d, func() {
		if err := f.Heal(); err != nil {
			n.logf("nemesis: self-heal of %s: %v", what, err)
		}
	})
	n.mu.Unlock()
	n.logf("nemesis: %s for %v", what, d)
	return f, nil
}

// table is a fresh nftables table name for one fault.
func (n *Network) table(kind string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextQ++
	return fmt.Sprintf("nemesis_%s%d", kind, n.nextQ)
}

// nft loads a ruleset into the host's namespace (nft -f -).
func (h *Host) nft(ctx context.Context, ruleset string) error {
	cmd := h.Command(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s\n%s", h.Name, err, strings.TrimSpace(string(out)), ruleset)
	}
	return nil
}

func (h *Host) dropTable(ctx context.Context, table string) error {
	return h.exec(ctx, "nft", "delete", "table", "inet", table)
}

// Partition cuts a off from every host in bs, both ways, for d: a drops
// every packet to or from them. a and bs still reach every other host
// (and the root namespace).
func (n *Network) Partition(ctx context.Context, a *Host, bs []*Host, d time.Duration) (*Fault, error) {
	if len(bs) == 0 {
		return nil, errors.New("partition from nobody")
	}
	for _, b := range bs {
		if b == a {
			return nil, fmt.Errorf("partition %s from itself", a.Name)
		}
	}
	table := n.table("p")
	set := strings.Join(ips(bs), ", ")
	rules := fmt.Sprintf(`table inet %[1]s {
	chain in { type filter hook input priority -10; policy accept; ip saddr { %[2]s } drop; }
	chain out { type filter hook output priority -10; policy accept; ip daddr { %[2]s } drop; }
}
`, table, set)
	if err := a.nft(ctx, rules); err != nil {
		return nil, err
	}
	return n.arm(fmt.Sprintf("partition %s | %s", a.Name, strings.TrimPrefix(toNames(bs), " to ")), d,
		func(ctx context.Context) error { return a.dropTable(ctx, table) })
}

// Loss drops fraction (0 < fraction < 1) of the packets h sends, for d: to
// the hosts in to only when any are given (h's links to them), else on
// every link of h.
func (n *Network) Loss(h *Host, fraction float64, d time.Duration, to ...*Host) (*Fault, error) {
	if fraction <= 0 || fraction >= 1 {
		return nil, fmt.Errorf("loss %v: want a fraction in (0, 1)", fraction)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	table := n.table("l")
	perMille := int(fraction*1000 + 0.5)
	match := ""
	if len(to) > 0 {
		match = "ip daddr { " + strings.Join(ips(to), ", ") + " } "
	}
	rules := fmt.Sprintf(`table inet %s {
	chain out { type filter hook output priority -10; policy accept; oifname "eth0" %snumgen random mod 1000 < %d drop; }
}
`, table, match, perMille)
	if err := h.nft(ctx, rules); err != nil {
		return nil, err
	}
	return n.arm(fmt.Sprintf("loss %.1f%% on %s%s", float64(perMille)/10, h.Name, toNames(to)), d,
		func(ctx context.Context) error { return h.dropTable(ctx, table) })
}

// Delay holds every packet h sends for delay ± jitter (uniform), for d: to
// the hosts in to only when any are given (h's links to them), else on
// every link of h. Packets leave in the order they were sent.
func (n *Network) Delay(h *Host, delay, jitter time.Duration, d time.Duration, to ...*Host) (*Fault, error) {
	if delay <= 0 || jitter < 0 || jitter > delay {
		return nil, fmt.Errorf("delay %v ± %v: want 0 < jitter <= delay", delay, jitter)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n.mu.Lock()
	n.nextQ++
	qnum := n.nextQ
	n.mu.Unlock()
	q, err := openQueue(h.NS, qnum, delay, jitter)
	if err != nil {
		return nil, fmt.Errorf("delay on %s: %w", h.Name, err)
	}
	// --queue-bypass: with no reader (this process gone) packets pass
	// undelayed instead of being dropped.
	var rules [][]string
	dsts := ips(to)
	if len(dsts) == 0 {
		dsts = []string{"0.0.0.0/0"}
	}
	for _, dst := range dsts {
		rules = append(rules, []string{"OUTPUT", "-o", "eth0", "-d", dst, "-j", "NFQUEUE", "--queue-num", fmt.Sprint(qnum), "--queue-bypass"})
	}
	iptables := func(ctx context.Context, op string, rule []string) error {
		args := append([]string{"-w", "-t", "mangle", op}, rule...)
		return h.exec(ctx, "iptables", args...)
	}
	remove := func(ctx context.Context, upTo int) error {
		var errs []error
		for _, r := range rules[:upTo] {
			errs = append(errs, iptables(ctx, "-D", r))
		}
		// Packets still held are released (late) before the queue closes.
		q.Close()
		return errors.Join(errs...)
	}
	for i, r := range rules {
		if err := iptables(ctx, "-I", r); err != nil {
			_ = remove(ctx, i)
			return nil, err
		}
	}
	return n.arm(fmt.Sprintf("delay %v±%v on %s%s", delay, jitter, h.Name, toNames(to)), d,
		func(ctx context.Context) error { return remove(ctx, len(rules)) })
}

func ips(hs []*Host) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, h.IP.String())
	}
	return out
}

func toNames(hs []*Host) string {
	if len(hs) == 0 {
		return ""
	}
	names := make([]string, 0, len(hs))
	for _, h := range hs {
		names = append(names, h.Name)
	}
	return " to " + strings.Join(names, ",")
}
