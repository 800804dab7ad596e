//go:build faults && cluster

package faults

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestClusterRedisPrimaryPartitioned is TestClusterRedisPrimaryStalled
// with the stall made by the network: one Redis primary partitioned from
// the ingress alone (every packet between the ingress's sockets and the
// primary's port dropped, both ways, no reset), while the consumer, the
// reaper and the cluster bus still reach it: no failover, the primary is
// only unreachable for the ingress, its connections up and silent. Same
// assertions: the other shards' admissions keep their latency (≥ 99%
// within healthySlack of their normal p99) and none ends 503 outcome_unknown.
//
// The cluster's nodes run on loopback in the root namespace and announce
// 127.0.0.1 (a node moved onto a test host would have to announce that
// host's address to every client and on the cluster bus, so the whole
// stack's cluster mode would move): the partition is made there instead.
// The ingress is started in a cgroup v2 of its own (clone into the cgroup,
// so every socket it ever opens is that cgroup's), and two nftables rules
// match that cgroup's sockets: output to the primary's port, input from it.
func TestClusterRedisPrimaryPartitioned(t *testing.T) {
	cg := newProcCgroup(t, "ingress")
	redisPrimaryStalled(t, "partition from the ingress", func(p *pipeline) { p.ingress.launch = cg.launch },
		func(_ *cluster, node, addr string) func() {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatal(err)
			}
			pt := cg.partition(t, port, 30*time.Second)
			return func() {
				out, in := pt.heal()
				t.Logf("partition of the ingress from %s (%s) healed: %d packets from the ingress to it dropped, %d from it to the ingress", node, addr, out, in)
				if out == 0 {
					t.Errorf("the partition from %s dropped no packet of the ingress: it was never partitioned", node)
				}
			}
		})
}

// procCgroup is a cgroup v2 the test made for processes it starts (the
// cluster-mode ingress): nftables' `socket cgroupv2` matches the sockets of
// its processes, and no other process's.
type procCgroup struct {
	dir     string // in the cgroup2 mount
	nftPath string // the same, relative to /sys/fs/cgroup as nft resolves it
	level   int    // its depth below the cgroup2 root
	fd      *os.File
}

var cgroupSeq atomic.Int64

// newProcCgroup makes the cgroup; it is removed when the test ends (its
// cleanup is registered before the pipeline's, so it runs after the
// processes in it were stopped).
func newProcCgroup(t *testing.T, name string) *procCgroup {
	t.Helper()
	mount, err := cgroup2Mount()
	if err != nil {
		t.Fatalf("cgroup v2 for the partition from the ingress: %v", err)
	}
	// nft resolves a cgroupv2 path below /sys/fs/cgroup (a hybrid host
	// mounts the v2 hierarchy at /sys/fs/cgroup/unified).
	rel, err := filepath.Rel("/sys/fs/cgroup", mount)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("the cgroup2 hierarchy is mounted at %s, outside /sys/fs/cgroup where nft looks for it", mount)
	}
	leaf := fmt.Sprintf("flashsale-faults-%d-%s-%d", os.Getpid(), name, cgroupSeq.Add(1))
	cg := &procCgroup{dir: filepath.Join(mount, leaf), nftPath: filepath.Join(rel, leaf), level: 1}
	cg.nftPath = strings.TrimPrefix(cg.nftPath, "./")
	if err := os.Mkdir(cg.dir, 0o755); err != nil {
		t.Fatalf("make cgroup %s: %v", cg.dir, err)
	}
	f, err := os.Open(cg.dir)
	if err != nil {
		_ = os.Remove(cg.dir)
		t.Fatalf("open cgroup %s: %v", cg.dir, err)
	}
	cg.fd = f
	t.Cleanup(func() {
		f.Close()
		// The processes are gone by now; their exit may take a moment to
		// leave the cgroup.
		var err error
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range 50 {
			if err = os.Remove(cg.dir); err == nil || os.IsNotExist(err) {
				return
			}
			<-tick.C
		}
		t.Errorf("remove cgroup %s: %v", cg.dir, err)
	})
	return cg
}

// cgroup2Mount returns where the cgroup2 hierarchy is mounted with its root
// (mountinfo's root field "/"), from /proc/self/mountinfo.
func cgroup2Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// id parent major:minor root mountpoint options ... - fstype source ...
		for i, x := range f {
			if x == "-" && i+1 < len(f) && f[i+1] == "cgroup2" && len(f) > 4 && f[3] == "/" {
				return f[4], nil
			}
		}
	}
	return "", fmt.Errorf("no cgroup2 mount of the hierarchy's root in /proc/self/mountinfo")
}

// launch starts bin inside the cgroup (clone3 CLONE_INTO_CGROUP), so even
// the sockets it opens at start-up are the cgroup's.
func (cg *procCgroup) launch(bin string) *exec.Cmd {
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.fd.Fd())}
	return cmd
}

// nftPartition is one partition between the cgroup's processes and a TCP
// port on this host: an nftables table of its own.
type nftPartition struct {
	t     *testing.T
	table string
	once  sync.Once
	timer *time.Timer
	out   int64
	in    int64
}

// partition drops every packet between the cgroup's sockets and port, both
// ways (DROP, never a reset: the peer sees silence, as behind a cut link),
// until heal, or after limit whatever happens (every fault is bounded).
func (cg *procCgroup) partition(t *testing.T, port string, limit time.Duration) *nftPartition {
	t.Helper()
	pt := &nftPartition{t: t, table: fmt.Sprintf("flashsale_faults_%d_%d", os.Getpid(), cgroupSeq.Add(1))}
	rules := fmt.Sprintf(`table inet %[1]s {
	chain out {
		type filter hook output priority -10; policy accept;
		socket cgroupv2 level %[2]d "%[3]s" tcp dport %[4]s counter drop
	}
	chain in {
		type filter hook input priority -10; policy accept;
		socket cgroupv2 level %[2]d "%[3]s" tcp sport %[4]s counter drop
	}
}
`, pt.table, cg.level, cg.nftPath, port)
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft partition: %v\n%s\n%s", err, out, rules)
	}
	pt.timer = time.AfterFunc(limit, func() { pt.heal() })
	t.Cleanup(func() { pt.heal() })
	return pt
}

var nftCounter = regexp.MustCompile(`counter packets (\d+)`)

// heal removes the partition (once) and returns the packets it dropped
// from the cgroup's processes (out) and to them (in).
func (pt *nftPartition) heal() (out, in int64) {
	pt.once.Do(func() {
		pt.timer.Stop()
		listing, err := exec.Command("nft", "list", "table", "inet", pt.table).CombinedOutput()
		if err != nil {
			pt.t.Logf("nft list table %s: %v\n%s", pt.table, err, listing)
		}
		if m := nftCounter.FindAllSubmatch(listing, -1); len(m) == 2 {
			pt.out, _ = strconv.ParseInt(string(m[0][1]), 10, 64)
			pt.in, _ = strconv.ParseInt(string(m[1][1]), 10, 64)
		}
		if b, err := exec.Command("nft", "delete", "table", "inet", pt.table).CombinedOutput(); err != nil {
			pt.t.Errorf("heal the partition: nft delete table %s: %v\n%s", pt.table, err, b)
		}
	})
	return pt.out, pt.in
}
