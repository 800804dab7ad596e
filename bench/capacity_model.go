package main

import (
	"errors"
	"fmt"
	"math"
)

// The capacity model turns per-answer CPU costs into a sizing. It is pure
// arithmetic (no I/O) so its sums are table-tested; capacity.go measures
// its inputs and capacity_report.go prints its output.
//
// A flash sale is two workloads one after the other: while stock lasts
// every buyer gets an order-bearing 202 (which costs, besides the answer,
// its status polls, the Redis reservation, the Kafka record, the
// consumer's write and MySQL's), then every buyer gets a sold-out 410
// (which costs the ingress's answer and, at most, one Redis read). A
// sizing for N buyers/s must carry the more expensive phase, so the model
// sizes each component for the worse of the two.

// Cost is one component's CPU per answer of each kind, in microseconds of
// one core. Measured is false when the component was neither measured nor
// given by flag (a remote process); it then takes no part in the sums.
type Cost struct {
	Name     string  `json:"name"`
	Measured bool    `json:"measured"`
	Source   string  `json:"source"` // "measured", "flag", "not measured"
	SoldOut  float64 `json:"us_per_sold_out"`
	Order    float64 `json:"us_per_order"`
	// SoldOutRange and OrderRange are the least and most over the
	// calibration pairs (SoldOut and Order are their medians); zero for
	// a cost given by flag.
	SoldOutRange [2]float64 `json:"us_per_sold_out_range"`
	OrderRange   [2]float64 `json:"us_per_order_range"`
	// SingleThread marks a component whose one instance runs on one core
	// (Redis): its per-instance rate is 1e6 / Order admissions/s, and it
	// scales by shards, not by cores.
	SingleThread bool `json:"single_thread,omitempty"`
	// CoLocatedOnly marks the load generator: part of this machine's sums,
	// never of a deployment's sizing.
	CoLocatedOnly bool `json:"co_located_only,omitempty"`
}

// perAnswer is the cost of one answer of a sale whose fraction
// orderShare of answers is order-bearing.
func (c Cost) perAnswer(orderShare float64) float64 {
	return orderShare*c.Order + (1-orderShare)*c.SoldOut
}

// errSingular means the two calibration runs had the same answer mix, so
// they cannot separate a 202's cost from a 410's.
var errSingular = errors.New("capacity: the calibration runs have the same mix of 202s and 410s")

// solveCosts splits CPU seconds spent over two runs into a cost per
// sold-out answer and per order-bearing answer (µs), from
//
//	cpu1 = soldOut1·s + orders1·o
//	cpu2 = soldOut2·s + orders2·o
//
// Negative solutions (noise on a component that barely works for one kind)
// are clamped to 0 and the other cost refitted from the run where it
// dominates.
func solveCosts(cpu1, soldOut1, orders1, cpu2, soldOut2, orders2 float64) (s, o float64, err error) {
	det := soldOut1*orders2 - soldOut2*orders1
	if math.Abs(det) < 1e-9*math.Max(1, math.Abs(soldOut1*orders2)) {
		return 0, 0, errSingular
	}
	s = (cpu1*orders2 - cpu2*orders1) / det
	o = (soldOut1*cpu2 - soldOut2*cpu1) / det
	switch {
	case s < 0 && o < 0:
		return 0, 0, nil
	case s < 0:
		s, o = 0, (cpu1+cpu2)/(orders1+orders2)
	case o < 0:
		o, s = 0, (cpu1+cpu2)/(soldOut1+soldOut2)
	}
	return s * 1e6, o * 1e6, nil
}

// predictRate is the answers/s a machine of cores fully busy serves for a
// mix with orderShare order-bearing answers, when every component in costs
// (the co-located ones, the load generator included) shares those cores:
// cores ÷ Σ CPU per answer.
func predictRate(costs []Cost, orderShare, cores float64) float64 {
	var us float64
	for _, c := range costs {
		if c.Measured {
			us += c.perAnswer(orderShare)
		}
	}
	if us <= 0 {
		return 0
	}
	return cores * 1e6 / us
}

// Target is what a sizing is for, with the assumptions it rests on.
type Target struct {
	BuyersPerSec float64 `json:"buyers_per_sec"`
	Units        float64 `json:"units"`
	Items        int     `json:"items"`
	// Headroom multiplies every load (1.5 = size for 50% more than the
	// target).
	Headroom float64 `json:"headroom"`
	// NodeCores is the size of one ingress or consumer replica.
	NodeCores float64 `json:"node_cores"`
	// RowOrdersPerSec is what one MySQL stock row takes (the one-hot-item
	// drain, bench -drain N -drain-items 1); it bounds orders/s per bucket.
	RowOrdersPerSec float64 `json:"row_orders_per_sec"`
	// PartitionOrdersPerSec is what one consumer (one partition's writer)
	// takes; it bounds orders/s per partition.
	PartitionOrdersPerSec float64 `json:"partition_orders_per_sec"`
	// BytesPerMessage is an order record on the wire; Replication the
	// topic's replication factor (every byte is written that many times).
	BytesPerMessage float64 `json:"bytes_per_message"`
	Replication     float64 `json:"replication"`
}

// Sizing is the model's answer for one Target.
type Sizing struct {
	Target Target `json:"target"`
	// OrderPhaseSecs is how long stock lasts when every buyer gets a 202:
	// Units ÷ BuyersPerSec.
	OrderPhaseSecs float64           `json:"order_phase_seconds"`
	Components     []ComponentSizing `json:"components"`
	// OrdersPerItemPerSec assumes buyers spread evenly over the items.
	OrdersPerItemPerSec float64  `json:"orders_per_item_per_sec"`
	BucketsPerItem      int      `json:"buckets_per_item"`
	Partitions          int      `json:"partitions"`
	KafkaMBPerSec       float64  `json:"kafka_mb_per_sec"`
	Assumptions         []string `json:"assumptions"`
}

// ComponentSizing is one component's share of a sizing.
type ComponentSizing struct {
	Name string `json:"name"`
	// Cores is the busier phase's load × headroom ÷ 1e6 µs per core-second.
	OrderPhaseCores   float64 `json:"order_phase_cores"`
	SoldOutPhaseCores float64 `json:"sold_out_phase_cores"`
	Cores             float64 `json:"cores"`
	// Instances are replicas of NodeCores, or Redis shards (one core each).
	Instances int    `json:"instances"`
	Note      string `json:"note,omitempty"`
	Measured  bool   `json:"measured"`
}

// size sizes every measured component of a deployment for t.
func size(costs []Cost, t Target) (Sizing, error) {
	if t.BuyersPerSec <= 0 || t.Units <= 0 || t.Items < 1 || t.Headroom < 1 || t.NodeCores <= 0 {
		return Sizing{}, fmt.Errorf("capacity: target %+v: expected positive buyers/s, units, items, node cores and a headroom of at least 1", t)
	}
	z := Sizing{Target: t, OrderPhaseSecs: t.Units / t.BuyersPerSec}
	load := t.BuyersPerSec * t.Headroom // answers/s to carry, either phase
	for _, c := range costs {
		if c.CoLocatedOnly {
			continue
		}
		cs := ComponentSizing{Name: c.Name, Measured: c.Measured}
		if !c.Measured {
			cs.Note = "not measured: give its costs by flag"
			z.Components = append(z.Components, cs)
			continue
		}
		cs.OrderPhaseCores = load * c.Order / 1e6
		cs.SoldOutPhaseCores = load * c.SoldOut / 1e6
		cs.Cores = math.Max(cs.OrderPhaseCores, cs.SoldOutPhaseCores)
		if c.SingleThread {
			// One shard is one core; the cores needed are the shards.
			cs.Instances = max(1, int(math.Ceil(cs.Cores)))
			if c.Order > 0 {
				cs.Note = fmt.Sprintf("single-threaded: %.0f admissions/s per shard at 100%% of its core", 1e6/c.Order)
			}
		} else {
			cs.Instances = max(1, int(math.Ceil(cs.Cores/t.NodeCores)))
		}
		z.Components = append(z.Components, cs)
	}
	orders := load // order phase: every answer is a 202
	z.OrdersPerItemPerSec = orders / float64(t.Items)
	if t.RowOrdersPerSec > 0 {
		z.BucketsPerItem = max(1, int(math.Ceil(z.OrdersPerItemPerSec/t.RowOrdersPerSec)))
	}
	if t.PartitionOrdersPerSec > 0 {
		z.Partitions = max(1, int(math.Ceil(orders/t.PartitionOrdersPerSec)))
	}
	z.KafkaMBPerSec = orders * t.BytesPerMessage * math.Max(1, t.Replication) / 1e6
	z.Assumptions = []string{
		fmt.Sprintf("every buyer sends one attempt; %.0f buyers/s × headroom %.2g = %.0f answers/s", t.BuyersPerSec, t.Headroom, load),
		fmt.Sprintf("order phase: while the %.0f units last (%.1f s) every answer is a 202; then every answer is a 410; each component is sized for its busier phase", t.Units, z.OrderPhaseSecs),
		"a 202's cost includes its status polls at the calibration run's polls per order (long polls), its Kafka record, the consumer's write and MySQL's",
		fmt.Sprintf("buyers spread evenly over the %d items: %.0f orders/s per item", t.Items, z.OrdersPerItemPerSec),
		fmt.Sprintf("one MySQL stock row takes %.0f orders/s (one-hot-item drain): stock buckets per item = ceil(orders/s per item ÷ that)", t.RowOrdersPerSec),
		fmt.Sprintf("one partition's consumer takes %.0f orders/s: partitions ≥ ceil(orders/s ÷ that), and ≥ consumer replicas", t.PartitionOrdersPerSec),
		fmt.Sprintf("Kafka bytes: %.0f B per record × replication %.0f", t.BytesPerMessage, math.Max(1, t.Replication)),
		fmt.Sprintf("replicas of %.0f cores for the ingress, consumer, Kafka and MySQL; Redis shards of one core each", t.NodeCores),
		"CPU per answer is constant with scale (no contention, no cross-node hop costs beyond what this machine's loopback has)",
	}
	for _, cs := range z.Components {
		if cs.Name == "consumer" && cs.Instances > z.Partitions {
			z.Partitions = cs.Instances
		}
	}
	return z, nil
}
