//go:build faults

package faults

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/flashsale-dev/flashsale/internal/nemesis"
	"github.com/flashsale-dev/flashsale/internal/testenv"
)

// testbed is the stack's servers, each in a test host of its own (a
// network namespace, internal/nemesis), listening on the host's address:
// one Redis, one MariaDB and three Kafka brokers in KRaft (each broker and
// controller, as the cluster mode's). The deployables of each pipeline run
// in hosts of their own too (place), so the nemesis can cut or slow any one
// link. The servers are started with deploy/local/stack.sh serve, the same
// settings the local stack gives its own. Nothing here touches the shared
// stack.
type testbed struct {
	t     *testing.T
	net   *nemesis.Network
	redis *nemesis.Host
	mysql *nemesis.Host
	kafka []*nemesis.Host // node id i+1
	took  time.Duration   // to start every server
}

const (
	bedRedisPort = 6379
	bedMySQLPort = 3306
	bedKafkaPort = 9092
	bedCtrlPort  = 9093
)

// newTestbed starts the servers in their hosts and waits until each serves.
func newTestbed(t *testing.T) *testbed {
	t.Helper()
	start := time.Now()
	b := &testbed{t: t, net: nemesis.New(t, "fsnet")}
	b.redis, b.mysql = b.net.Host("redis"), b.net.Host("mysql")
	var voters []string
	for i := 1; i <= 3; i++ {
		h := b.net.Host(fmt.Sprintf("kafka-%d", i))
		b.kafka = append(b.kafka, h)
		voters = append(voters, fmt.Sprintf("%d@%s", i, h.Addr(bedCtrlPort)))
	}
	script := testenv.StackScript(t)
	out, err := exec.Command(script, "serve", "kafka-id").Output()
	if err != nil {
		t.Fatalf("stack.sh serve kafka-id: %v", err)
	}
	clusterID := strings.TrimSpace(string(out))
	dir := t.TempDir()
	b.serve(b.redis, "redis", "--ip", b.redis.IP.String(), "--dir", filepath.Join(dir, "redis"), "--port", strconv.Itoa(bedRedisPort))
	b.serve(b.mysql, "mysql", "--ip", b.mysql.IP.String(), "--dir", filepath.Join(dir, "mysql"), "--port", strconv.Itoa(bedMySQLPort))
	for i, h := range b.kafka {
		b.serve(h, fmt.Sprintf("kafka-%d", i+1), "--ip", h.IP.String(), "--dir", filepath.Join(dir, h.Name),
			"--node-id", strconv.Itoa(i+1), "--voters", strings.Join(voters, ","), "--cluster-id", clusterID,
			"--port", strconv.Itoa(bedKafkaPort), "--controller-port", strconv.Itoa(bedCtrlPort))
	}
	b.setEnv(t)
	testenv.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		c, err := net.DialTimeout("tcp", b.redis.Addr(bedRedisPort), time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}, "Redis in %s never answered", b.redis)
	testenv.Redis(t)
	testenv.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		db, err := sql.Open("mysql", b.dsn(""))
		if err != nil {
			return false
		}
		defer db.Close()
		return db.Ping() == nil
	}, "MariaDB in %s never answered", b.mysql)
	var last string
	testenv.Eventually(t, 3*time.Minute, 500*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		meta, err := (&kafka.Client{Addr: kafka.TCP(b.brokers()...)}).Metadata(ctx, &kafka.MetadataRequest{})
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%d brokers, controller %d", len(meta.Brokers), meta.Controller.ID)
		return len(meta.Brokers) == len(b.kafka)
	}, "the Kafka cluster in the test hosts never had %d brokers (last: %v)", len(b.kafka), lazy(func() string { return last }))
	b.took = time.Since(start)
	t.Logf("testbed up in %v: redis %s, mysql %s, kafka %v (network %s)", b.took.Round(100*time.Millisecond), b.redis, b.mysql, b.kafka, b.net.Prefix())
	return b
}

// serve starts stack.sh serve svc args... inside h, its output in a log
// under the test's temp dir (tail printed if the test fails); the server is
// SIGKILLed when the test ends (and any leftover by the network's Close).
func (b *testbed) serve(h *nemesis.Host, name string, args ...string) {
	t := b.t
	log := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	svc := strings.SplitN(name, "-", 2)[0]
	cmd := h.Command(context.Background(), testenv.StackScript(t), append([]string{"serve", svc}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("serve %s in %s: %v", name, h, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
		}
		if t.Failed() {
			t.Logf("---- %s log tail (%s) ----\n%s", name, log, tail(log, 20))
		}
	})
}

func (b *testbed) brokers() []string {
	var out []string
	for _, h := range b.kafka {
		out = append(out, h.Addr(bedKafkaPort))
	}
	return out
}

func (b *testbed) dsn(db string) string {
	if db == "" {
		db = "flashsale"
	}
	return fmt.Sprintf("flashsale:flashsale@tcp(%s)/%s", b.mysql.Addr(bedMySQLPort), db)
}

// setEnv points testenv (and so newPipeline and the deployables) at the
// testbed's servers for test t: topics of 3 copies, 2 in sync.
func (b *testbed) setEnv(t *testing.T) {
	t.Setenv("FLASHSALE_MYSQL_DSN", b.dsn(""))
	t.Setenv("FLASHSALE_REDIS_ADDR", b.redis.Addr(bedRedisPort))
	t.Setenv("FLASHSALE_KAFKA_BROKERS", strings.Join(b.brokers(), ","))
	t.Setenv("FLASHSALE_TOPIC_REPLICATION", "3")
	t.Setenv("FLASHSALE_TOPIC_MIN_INSYNC", "2")
}

// brokerHost is the host of Kafka node id.
func (b *testbed) brokerHost(id int) *nemesis.Host { return b.kafka[id-1] }

// leader is the node id leading topic's partition 0, asked of each broker
// in turn (the first that answers).
func (b *testbed) leader(ctx context.Context, topic string) (int, []int, error) {
	return b.leaderExcept(ctx, topic, 0)
}

// leaderExcept is leader asked of every broker but node skip (an isolated
// broker still believes it leads).
func (b *testbed) leaderExcept(ctx context.Context, topic string, skip int) (int, []int, error) {
	var ask []string
	for i, addr := range b.brokers() {
		if i+1 != skip {
			ask = append(ask, addr)
		}
	}
	pt, err := partitionZero(ctx, ask, topic)
	if err == nil && pt.leader < 0 {
		err = fmt.Errorf("%s has no leader of partition 0", topic)
	}
	return pt.leader, pt.isr, err
}

// netPipeline is a pipeline on the testbed with each deployable in a host
// of its own (ingress, consumer-N, reaper-N), reachable from the test on
// the host's address.
func newNetPipeline(t *testing.T, b *testbed, cfg settings) *pipeline {
	t.Helper()
	b.setEnv(t)
	p := newPipeline(t, cfg)
	place(b.net.Host("ingress"), p.ingress)
	for _, c := range p.consumers {
		place(b.net.Host(c.name), c)
	}
	for _, r := range p.reapers {
		place(b.net.Host(r.name), r)
	}
	p.base = strings.Replace(p.base, "127.0.0.1", b.net.Host("ingress").IP.String(), 1)
	// FLASHSALE_NETFAULTS_INGRESS=K=V,... gives the ingress more settings
	// (FLASHSALE_K=V), to try one against a fault: a diagnostic knob.
	if extra := os.Getenv("FLASHSALE_NETFAULTS_INGRESS"); extra != "" {
		for _, kv := range strings.Split(extra, ",") {
			p.ingress.env = append(p.ingress.env, "FLASHSALE_"+kv)
		}
		t.Logf("ingress settings added: %s", extra)
	}
	return p
}

// place makes p run inside h: its listen addresses and health URL move
// from loopback to h's address (same ports: a fresh namespace has them
// all free).
func place(h *nemesis.Host, p *proc) {
	ip := h.IP.String()
	for i, kv := range p.env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "FLASHSALE_HTTP_ADDR" || k == "FLASHSALE_METRICS_ADDR" {
			if host, port, err := net.SplitHostPort(v); err == nil && host == "127.0.0.1" {
				p.env[i] = k + "=" + net.JoinHostPort(ip, port)
			}
		}
	}
	p.health = strings.Replace(p.health, "127.0.0.1", ip, 1)
	p.launch = func(bin string) *exec.Cmd { return h.Command(context.Background(), bin) }
}
