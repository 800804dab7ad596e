package main

import (
	"bytes"
	"context"
	"github.com/flashsale-dev/flashsale/pkg/config"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCapacityReport runs -capacity against the real pipeline (in-process,
// so the ingress is this process and the consumer is not told apart from
// it: "none") and checks the report's structure: every component has a
// cost row, every measured one costs more than nothing per 202, the sizing
// has every deployed component with instances and assumptions, and every
// sale was predicted. No timing is asserted: the machine is shared.
func TestCapacityReport(t *testing.T) {
	p := startPipeline(t, time.Minute)
	c := p.Common
	c.OrdersTopic, c.ConsumerGroup = p.Topic, p.Group
	s := testSettings(p.URL)
	s.ReapWait = 0
	cs := CapacitySettings{Capacity: true, Buyers: 2000, Concurrency: 16, Checks: 1, Calibrations: 2,
		Ingress: "self", Consumer: "none", Kafka: "cmd:kafka.Kafka", MySQL: "comm:mariadbd|mysqld",
		Target: Target{BuyersPerSec: 100_000, Units: 1_000_000, Items: 1000, Headroom: 1.5, NodeCores: 8,
			RowOrdersPerSec: 28_512, PartitionOrdersPerSec: 4_066, Replication: 3}}
	if err := cs.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := RunCapacity(ctx, c, s, cs)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Cost{}
	for _, co := range rep.Costs {
		names[co.Name] = co
	}
	for _, n := range []string{"ingress", "redis", "kafka", "consumer", "mysql", "bench"} {
		co, ok := names[n]
		if !ok {
			t.Fatalf("no cost row for %s: %+v", n, rep.Costs)
		}
		if n == "consumer" {
			if co.Measured || co.Source != "not measured" {
				t.Errorf("consumer selected none: %+v, want not measured", co)
			}
			continue
		}
		if !co.Measured || co.Order <= 0 {
			t.Errorf("%s: %+v, want a measured cost per 202 above 0", n, co)
		}
		// The cost is the median of the two pairs' (their mean): inside
		// their least..most.
		if co.OrderRange[0] > co.Order || co.Order > co.OrderRange[1] || co.SoldOutRange[0] > co.SoldOut || co.SoldOut > co.SoldOutRange[1] {
			t.Errorf("%s: %+v, want each median within its range", n, co)
		}
	}
	if names["ingress"].SoldOut <= 0 {
		t.Errorf("ingress per 410: %v, want above 0", names["ingress"].SoldOut)
	}
	if rep.BytesPerMessage <= 0 || rep.PollsPerOrder <= 0 {
		t.Errorf("bytes per message %v, polls per order %v: want both above 0", rep.BytesPerMessage, rep.PollsPerOrder)
	}
	if rep.Calibrations != 2 || len(rep.Runs) != 5 || rep.Runs[0].Kind != "sold-out-heavy" || rep.Runs[1].Kind != "order-heavy" ||
		rep.Runs[2].Kind != "sold-out-heavy" || rep.Runs[3].Kind != "order-heavy" || rep.Runs[4].Kind != "check" {
		t.Fatalf("runs %+v, want two pairs of calibration sales and one check", rep.Runs)
	}
	for _, r := range rep.Runs {
		if r.Accepted+r.SoldOut == 0 || r.AnswersPerSec <= 0 || r.Predicted <= 0 {
			t.Errorf("%s sale: %+v, want answers, a measured and a predicted rate", r.Kind, r)
		}
	}
	if rep.Runs[1].Accepted != cs.Buyers || rep.Runs[0].Accepted != cs.Buyers/20 {
		t.Errorf("calibration 202s %d and %d, want %d and %d", rep.Runs[0].Accepted, rep.Runs[1].Accepted, cs.Buyers/20, cs.Buyers)
	}
	if len(rep.Sizing.Components) != 5 || len(rep.Sizing.Assumptions) == 0 || rep.Sizing.Partitions < 1 || rep.Sizing.BucketsPerItem < 1 {
		t.Errorf("sizing %+v", rep.Sizing)
	}
	var out bytes.Buffer
	if err := WriteCapacity(&out, rep, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CPU per answer", "median of 2 calibration pairs", "total (pipeline)", "sizing for 100000 buyers/s", "assumptions:", "not measured", "check median error"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCapacityRedisSelectorFollowsTheURL: with FLASHSALE_REDIS_URL set (the
// TLS stack), Redis is looked for at the URL's address, not at
// FLASHSALE_REDIS_ADDR's default, which named another, idle server.
func TestCapacityRedisSelectorFollowsTheURL(t *testing.T) {
	var c config.Common
	c.RedisAddr = "127.0.0.1:6379"
	c.Redis.URL = "rediss://flashsale@127.0.0.1:16380"
	for _, cp := range capacityComponents(c, CapacitySettings{}) {
		if cp.name == "redis" && (cp.sel.Kind != "listen" || cp.sel.Value != "16380") {
			t.Fatalf("redis selector %+v, want the URL's address", cp.sel)
		}
	}
}

// TestListenSelectorFindsTheListener: "listen:PORT" selects the process
// that listens on PORT (here this test's own listener), whatever its
// command line, and nothing for a port nobody listens on.
func TestListenSelectorFindsTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	sel, err := parseProcSelector("listen:" + port)
	if err != nil {
		t.Fatal(err)
	}
	if got := listeners(sel.Value); !slices.Equal(got, []string{strconv.Itoa(os.Getpid())}) {
		t.Fatalf("listeners of port %s: %v, want this process (%d)", port, got, os.Getpid())
	}
	ln.Close()
	if got := listeners(port); len(got) != 0 {
		t.Fatalf("listeners of port %s after its close: %v, want none", port, got)
	}
	for _, bad := range []string{"listen:", "listen:x", "listen:0", "listen:70000"} {
		if _, err := parseProcSelector(bad); err == nil {
			t.Errorf("parseProcSelector(%q) accepted", bad)
		}
	}
}

// TestListenInodes reads a /proc/net/tcp table: only LISTEN rows of the port.
func TestListenInodes(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:3FF4 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:3FF4 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 5002 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:3FF3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5003 1 0000000000000000 100 0 0 10 0
`
	if got := listenInodes(table, "16372"); !slices.Equal(got, []string{"5001"}) {
		t.Fatalf("inodes listening on 16372 (0x3FF4): %v, want [5001]", got)
	}
}
