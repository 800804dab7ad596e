package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func nearly(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestSolveCosts(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		cpu1, s1, o1, cpu2, s2, o2 float64
		wantS, wantO               float64
		wantErr                    error
	}{
		// 100 µs per 410, 300 µs per 202.
		{"exact", 0.01*1 + 0.03*0.1, 100, 10, 100*100e-6 + 900*300e-6, 100, 900, 100, 300, nil},
		{"only orders cost", 10 * 300e-6, 100, 10, 900 * 300e-6, 100, 900, 0, 300, nil},
		{"negative sold-out clamps", 0.001, 1000, 10, 0.5, 10, 1000, 0, 0.501 / 1010 * 1e6, nil},
		{"same mix", 1, 100, 10, 2, 200, 20, 0, 0, errSingular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, o, err := solveCosts(tc.cpu1, tc.s1, tc.o1, tc.cpu2, tc.s2, tc.o2)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if !nearly(s, tc.wantS) || !nearly(o, tc.wantO) {
				t.Fatalf("got %.6g, %.6g µs; want %.6g, %.6g", s, o, tc.wantS, tc.wantO)
			}
		})
	}
}

func TestPredictRate(t *testing.T) {
	costs := []Cost{
		{Name: "ingress", Measured: true, SoldOut: 100, Order: 300},
		{Name: "redis", Measured: true, SoldOut: 0, Order: 100},
		{Name: "remote", Measured: false, SoldOut: 1e6, Order: 1e6},
	}
	for _, tc := range []struct {
		share, cores, want float64
	}{
		{0, 2, 2e6 / 100},   // all 410: 100 µs each
		{1, 2, 2e6 / 400},   // all 202: 400 µs each
		{0.5, 2, 2e6 / 250}, // half and half
		{0.5, 1, 1e6 / 250}, // one core
	} {
		if got := predictRate(costs, tc.share, tc.cores); !nearly(got, tc.want) {
			t.Errorf("share %v cores %v: %v, want %v", tc.share, tc.cores, got, tc.want)
		}
	}
	if got := predictRate(nil, 0.5, 2); got != 0 {
		t.Errorf("no costs: %v, want 0", got)
	}
}

func TestSize(t *testing.T) {
	costs := []Cost{
		{Name: "ingress", Measured: true, SoldOut: 80, Order: 200},
		{Name: "consumer", Measured: true, SoldOut: 0, Order: 50},
		{Name: "redis", Measured: true, SoldOut: 5, Order: 20, SingleThread: true},
		{Name: "mysql", Measured: false},
		{Name: "bench", Measured: true, SoldOut: 50, Order: 100, CoLocatedOnly: true},
	}
	tg := Target{BuyersPerSec: 100_000, Units: 1_000_000, Items: 1000, Headroom: 1.5, NodeCores: 8,
		RowOrdersPerSec: 25_000, PartitionOrdersPerSec: 20_000, BytesPerMessage: 150, Replication: 3}
	z, err := size(costs, tg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ComponentSizing{
		// 150,000 answers/s: 202s cost 200 µs → 30 cores → 4 nodes of 8.
		"ingress":  {OrderPhaseCores: 30, SoldOutPhaseCores: 12, Cores: 30, Instances: 4, Measured: true},
		"consumer": {OrderPhaseCores: 7.5, Cores: 7.5, Instances: 1, Measured: true},
		// 3 cores of admissions → 3 shards.
		"redis": {OrderPhaseCores: 3, SoldOutPhaseCores: 0.75, Cores: 3, Instances: 3, Measured: true},
		"mysql": {},
	}
	if len(z.Components) != len(want) {
		t.Fatalf("components %+v, want %d (bench is co-located only)", z.Components, len(want))
	}
	for _, c := range z.Components {
		w, ok := want[c.Name]
		if !ok {
			t.Fatalf("unexpected component %q", c.Name)
		}
		if !nearly(c.OrderPhaseCores, w.OrderPhaseCores) || !nearly(c.SoldOutPhaseCores, w.SoldOutPhaseCores) ||
			!nearly(c.Cores, w.Cores) || c.Instances != w.Instances || c.Measured != w.Measured {
			t.Errorf("%s: %+v, want %+v", c.Name, c, w)
		}
	}
	if !nearly(z.OrderPhaseSecs, 10) || !nearly(z.OrdersPerItemPerSec, 150) || z.BucketsPerItem != 1 ||
		z.Partitions != 8 || !nearly(z.KafkaMBPerSec, 150_000*150*3/1e6) {
		t.Errorf("sizing %+v", z)
	}
	if len(z.Assumptions) == 0 {
		t.Error("no assumptions printed")
	}
	// One hot item: 150,000 orders/s on one item → 6 buckets of 25,000.
	tg.Items = 1
	if z, _ = size(costs, tg); z.BucketsPerItem != 6 {
		t.Errorf("one item: %d buckets, want 6", z.BucketsPerItem)
	}
	for _, bad := range []Target{{}, {BuyersPerSec: 1, Units: 1, Items: 1, Headroom: 0.5, NodeCores: 1}} {
		if _, err := size(costs, bad); err == nil {
			t.Errorf("target %+v: no error", bad)
		}
	}
}

func TestParseCapacityInputs(t *testing.T) {
	m, err := parseCostOverrides("consumer=0/45.5, mysql=1/60")
	if err != nil || m["consumer"] != [2]float64{0, 45.5} || m["mysql"] != [2]float64{1, 60} {
		t.Fatalf("%v %v", m, err)
	}
	for _, bad := range []string{"consumer=45", "nosuch=1/2", "mysql=-1/2", "ingress=a/b"} {
		if _, err := parseCostOverrides(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	for _, good := range []string{"self", "none", "comm:ingress", "comm:mariadbd|mysqld", "cmd:kafka.Kafka", "pid:1"} {
		if _, err := parseProcSelector(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "comm:", "pid:x", "exe:foo"} {
		if _, err := parseProcSelector(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if got := (procSelector{Kind: "self"}).cpu(); got <= 0 {
		t.Errorf("self cpu %v, want above 0", got)
	}
	if got := (procSelector{Kind: "pid", Value: "1"}).cpu(); got < 0 {
		t.Errorf("pid 1 cpu %v", got)
	}
}

// TestWriteCapacityJSON: -capacity -json prints the report so that it reads
// back whole, and the text report says "not measured" for a remote one.
func TestWriteCapacityJSON(t *testing.T) {
	costs := []Cost{{Name: "ingress", Measured: true, Source: "measured", SoldOut: 80, Order: 200}, {Name: "mysql", Source: "not measured"}}
	z, err := size(costs, Target{BuyersPerSec: 1000, Units: 100, Items: 1, Headroom: 1, NodeCores: 2, RowOrdersPerSec: 100, PartitionOrdersPerSec: 100})
	if err != nil {
		t.Fatal(err)
	}
	in := CapacityReport{Cores: 2, Costs: costs, BytesPerMessage: 157, PollsPerOrder: 1, Sizing: z,
		Runs: []CapacityRun{{Kind: "check", Accepted: 5, SoldOut: 5, AnswersPerSec: 100, Predicted: 110, ErrorPct: 10, CPU: map[string]float64{"ingress": 0.1}}}}
	var b bytes.Buffer
	if err := WriteCapacity(&b, in, true); err != nil {
		t.Fatal(err)
	}
	var out CapacityReport
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
	b.Reset()
	if err := WriteCapacity(&b, in, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "not measured") || !strings.Contains(b.String(), "+10.0%") {
		t.Errorf("text report:\n%s", b.String())
	}
}
