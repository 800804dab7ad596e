package nemesis

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// These tests make real namespaces: they need root, ip, nft and iptables
// (deploy/local/stack.sh up installs them). FLASHSALE_NO_NETNS=1 skips them
// on a machine that cannot (they are never skipped silently otherwise);
// -short (make test-unit) skips them too.
func needNetns(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root, ip, nft and iptables (the stack's packages): skipped under -short; `make test` runs it")
	}
	if os.Getenv("FLASHSALE_NO_NETNS") != "" {
		t.Skip("FLASHSALE_NO_NETNS set")
	}
}

// echo serves a line echo on host h, port 7000.
func echo(t *testing.T, h *Host) string {
	t.Helper()
	ln, err := h.Listen("tcp", h.Addr(7000))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return h.Addr(7000)
}

// rtt is the median round trip of n one-line exchanges on c.
func rtt(t *testing.T, c net.Conn, n int) time.Duration {
	t.Helper()
	r := bufio.NewReader(c)
	var ds []time.Duration
	for range n {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		if _, err := c.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func TestPartitionDropsBothWaysAndHeals(t *testing.T) {
	needNetns(t)
	n := New(t, "nmtpart")
	a, b, c := n.Host("a"), n.Host("b"), n.Host("c")
	bAddr, cAddr := echo(t, b), echo(t, c)
	aAddr := echo(t, a)
	ctx := context.Background()
	conn, err := a.DialContext(ctx, "tcp", bAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Logf("a -> b rtt before: %v", rtt(t, conn, 5))

	f, err := n.Partition(ctx, a, []*Host{b}, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The open connection: a write is taken, no answer comes back.
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	_, _ = conn.Write([]byte("ping\n"))
	if _, err := bufio.NewReader(conn).ReadString('\n'); err == nil {
		t.Errorf("a got b's answer on an open connection during the partition")
	}
	for _, dir := range []struct {
		from *Host
		to   string
	}{{a, bAddr}, {b, aAddr}} {
		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		if c, err := dir.from.DialContext(dctx, "tcp", dir.to); err == nil {
			c.Close()
			t.Errorf("%s dialled %s during the partition", dir.from.Name, dir.to)
		} else if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "timeout") {
			t.Errorf("%s -> %s: %v, want a timeout (packets dropped, not refused)", dir.from.Name, dir.to, err)
		}
		cancel()
	}
	// a still reaches c, and b reaches c.
	for _, from := range []*Host{a, b} {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := from.DialContext(dctx, "tcp", cAddr)
		cancel()
		if err != nil {
			t.Errorf("%s -> c during the partition of a|b: %v", from.Name, err)
		} else {
			c.Close()
		}
	}
	// Self-healing, with nobody calling Heal.
	select {
	case <-f.Healed():
	case <-time.After(10 * time.Second):
		t.Fatal("the partition did not heal itself after 3s")
	}
	healed := time.Since(f.Start)
	var back time.Duration
	redial := time.NewTicker(20 * time.Millisecond)
	defer redial.Stop()
	for start := time.Now(); ; <-redial.C {
		dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		c, err := a.DialContext(dctx, "tcp", bAddr)
		cancel()
		if err == nil {
			c.Close()
			back = time.Since(start)
			break
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("a cannot reach b 15s after the heal: %v", err)
		}
	}
	t.Logf("partition healed itself after %v; a reached b again %v later", healed.Round(time.Millisecond), back.Round(time.Millisecond))
}

func TestDelayAddsRoundTrip(t *testing.T) {
	needNetns(t)
	n := New(t, "nmtdelay")
	a, b := n.Host("a"), n.Host("b")
	conn, err := a.DialContext(context.Background(), "tcp", echo(t, b))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	before := rtt(t, conn, 20)
	f, err := n.Delay(b, 200*time.Millisecond, 50*time.Millisecond, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	during := rtt(t, conn, 20)
	if err := f.Heal(); err != nil {
		t.Fatal(err)
	}
	after := rtt(t, conn, 20)
	t.Logf("median rtt a -> b: before %v, with 200ms±50ms on b %v, after heal %v", before, during, after)

	// On b's link to a only: c's conversation with b keeps its pace.
	c := n.Host("c")
	cconn, err := c.DialContext(context.Background(), "tcp", b.Addr(7000))
	if err != nil {
		t.Fatal(err)
	}
	defer cconn.Close()
	f, err = n.Delay(b, 200*time.Millisecond, 50*time.Millisecond, time.Minute, a)
	if err != nil {
		t.Fatal(err)
	}
	toA, toC := rtt(t, conn, 10), rtt(t, cconn, 10)
	_ = f.Heal()
	t.Logf("with the delay on b's link to a only: median rtt a -> b %v, c -> b %v", toA, toC)
	// c -> b is judged against a -> b, not a wall-clock bound: without the
	// delay it is well under half of the delayed round trip.
	if toA < 140*time.Millisecond || toC > toA/2 {
		t.Errorf("delay on b's link to a: rtt a -> b %v (want about 200ms), c -> b %v (want no delay: under half of a -> b)", toA, toC)
	}
	// Generous bounds: a noisy 2-core machine adds, never removes.
	if during < 140*time.Millisecond || during > time.Second {
		t.Errorf("rtt with the delay %v, want about 200ms", during)
	}
	if after > during/2 {
		t.Errorf("rtt after heal %v, want it back near %v (under half of %v with the delay)", after, before, during)
	}
}

func TestLossDropsSomePackets(t *testing.T) {
	needNetns(t)
	n := New(t, "nmtloss")
	a, b := n.Host("a"), n.Host("b")
	pc, err := a.ListenPacket("udp", a.Addr(7001))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	send := func(count int) int {
		c, err := b.DialContext(context.Background(), "udp", a.Addr(7001))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Warm up (neighbour resolution) until a datagram gets through.
		buf := make([]byte, 64)
		for i := 0; ; i++ {
			_, _ = c.Write([]byte("w"))
			_ = pc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if _, _, err := pc.ReadFrom(buf); err == nil {
				break
			}
			if i > 50 {
				t.Fatal("no datagram from b reaches a")
			}
		}
		// Drain the other warm-up datagrams, so only the count is counted.
		for {
			_ = pc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, _, err := pc.ReadFrom(buf); err != nil {
				break
			}
		}
		got := make(chan int)
		go func() {
			k := 0
			for {
				_ = pc.SetReadDeadline(time.Now().Add(time.Second))
				if _, _, err := pc.ReadFrom(buf); err != nil {
					got <- k
					return
				}
				k++
			}
		}()
		// One datagram every 100 µs at most, not to overrun the receive buffer.
		pace := time.NewTicker(100 * time.Microsecond)
		for range count {
			_, _ = c.Write([]byte("x"))
			<-pace.C
		}
		pace.Stop()
		return <-got
	}
	const count = 2000
	clean := send(count)
	f, err := n.Loss(b, 0.05, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lossy := send(count)
	_ = f.Heal()
	lost := float64(count-lossy) / count
	t.Logf("udp datagrams b -> a received: %d of %d clean, %d of %d with 5%% loss on b (%.1f%% lost)", clean, count, lossy, count, 100*lost)
	if clean < count*99/100 {
		t.Errorf("%d of %d received without any fault", clean, count)
	}
	if lost < 0.01 || lost > 0.15 {
		t.Errorf("%.1f%% lost with 5%% loss", 100*lost)
	}
}

func TestCloseAndLeftoversRemoveEverything(t *testing.T) {
	needNetns(t)
	ctx := context.Background()
	old, err := Open(ctx, "nmtleft")
	if err != nil {
		t.Fatal(err)
	}
	h, err := old.AddHost(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	sleeper := h.Command(ctx, "sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	if _, err := old.Partition(ctx, h, []*Host{mustHost(t, old, "y")}, time.Hour); err != nil {
		t.Fatal(err)
	}
	// A new run of the same name (the old one "killed", never closed).
	n, err := Open(ctx, "nmtleft")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a process left in an old host still runs after Open")
	}
	if left := leftovers(t, "nmtleft"); len(left) > 1 { // the new bridge
		t.Errorf("after Open, left from the earlier run: %v", left)
	}
	if _, err := n.AddHost(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, "nmtleft"); len(left) > 0 {
		t.Errorf("after Close: %v", left)
	}
	old.mu.Lock()
	old.closed = true // its timers must not act on the new run's names
	old.mu.Unlock()
}

func mustHost(t *testing.T, n *Network, name string) *Host {
	h, err := n.AddHost(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// leftovers lists namespaces and links named for network name.
func leftovers(t *testing.T, name string) []string {
	var out []string
	ns, _ := exec.Command("ip", "netns", "list").Output()
	for _, l := range strings.Split(string(ns), "\n") {
		if strings.HasPrefix(l, "nm-"+name+"-") {
			out = append(out, "netns "+l)
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, l := range strings.Split(string(links), "\n") {
		if f := strings.Fields(l); len(f) > 1 && strings.HasPrefix(f[1], "nm"+name+".") {
			out = append(out, "link "+f[1])
		}
	}
	return out
}
