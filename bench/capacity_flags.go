package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// CapacitySettings are -capacity's flags (capacity.go): how to calibrate,
// which processes are which component, costs given instead of measured,
// and the target to size for.
type CapacitySettings struct {
	Capacity bool
	// Buyers is each calibration run's buyers; Concurrency its closed loop.
	Buyers, Concurrency int
	// Checks is how many check runs (a mix of half 202s, half 410s) are
	// predicted and measured; the report gives their median. 0 measures
	// the costs alone (bench -capacity -capacity-checks 0: the per-answer
	// CPU table, issue 42).
	Checks int
	// Calibrations is how many pairs of calibration sales are run; each
	// component's cost is the median of the pairs' (the machine is shared
	// and noisy: one pair can land on another process's burst).
	Calibrations int
	// Procs are the process selectors per component (capacity_procs.go).
	Ingress, Consumer, Redis, Kafka, MySQL string
	// Costs override measured costs: "name=SOLDOUT/ORDER" µs, comma-separated
	// (for a remote component, or the consumer re-measured elsewhere).
	Costs  string
	Target Target
}

// RegisterFlags implements config.Registerer.
func (c *CapacitySettings) RegisterFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.Capacity, "capacity", false, "capacity model: measure each component's CPU per 410 and per 202 in two calibration sales, print a sizing for -capacity-buyers-per-s etc., and check the model's prediction for this machine against measured sales")
	fs.IntVar(&c.Buyers, "capacity-buyers", 20_000, "buyers of each calibration and check sale")
	fs.IntVar(&c.Concurrency, "capacity-concurrency", 128, "closed-loop workers of each calibration and check sale")
	fs.IntVar(&c.Checks, "capacity-checks", 3, "check sales (half 202s, half 410s) predicted and measured; the median is reported; 0 = the per-answer CPU table alone")
	fs.IntVar(&c.Calibrations, "capacity-calibrations", 3, "pairs of calibration sales (one sold-out-heavy, one order-heavy); each cost is the median over the pairs")
	fs.StringVar(&c.Ingress, "capacity-ingress", "comm:ingress", "processes of the ingress: comm:NAME[|NAME], cmd:TEXT, listen:PORT, pid:N, self or none (remote)")
	fs.StringVar(&c.Consumer, "capacity-consumer", "comm:consumer", "processes of the consumer (order writers), as -capacity-ingress")
	fs.StringVar(&c.Redis, "capacity-redis", "", "processes of Redis, as -capacity-ingress (or listen:PORT); empty = the process listening on the Redis address's port (FLASHSALE_REDIS_URL's, else -redis-addr's)")
	fs.StringVar(&c.Kafka, "capacity-kafka", "cmd:kafka.Kafka", "processes of Kafka, as -capacity-ingress")
	fs.StringVar(&c.MySQL, "capacity-mysql", "comm:mariadbd|mysqld", "processes of MySQL, as -capacity-ingress")
	fs.StringVar(&c.Costs, "capacity-costs", "", "costs given instead of measured, µs of CPU per 410 and per 202: name=SOLDOUT/ORDER,... (names ingress, consumer, redis, kafka, mysql)")
	fs.Float64Var(&c.Target.BuyersPerSec, "capacity-buyers-per-s", 100_000, "target: buyers (answers) per second")
	fs.Float64Var(&c.Target.Units, "capacity-units", 1_000_000, "target: units on sale")
	fs.IntVar(&c.Target.Items, "capacity-items", 1_000, "target: items the units are spread over")
	fs.Float64Var(&c.Target.Headroom, "capacity-headroom", 1.5, "target: size for this multiple of the load")
	fs.Float64Var(&c.Target.NodeCores, "capacity-node-cores", 8, "target: cores of one ingress, consumer, Kafka or MySQL node")
	fs.Float64Var(&c.Target.RowOrdersPerSec, "capacity-row-orders-per-s", 28_512, "target: orders/s one MySQL stock row takes (bench -drain N -drain-items 1; BENCHMARKS.md)")
	fs.Float64Var(&c.Target.PartitionOrdersPerSec, "capacity-replica-orders-per-s", 4_066, "target: orders/s one consumer replica writes over many items (bench -drain N -drain-items 1000; BENCHMARKS.md); re-measure after a change to the write path")
	fs.Float64Var(&c.Target.Replication, "capacity-replication", 3, "target: replication factor of the orders topic")
}

// Validate implements config.Registerer.
func (c *CapacitySettings) Validate() error {
	if !c.Capacity {
		return nil
	}
	if c.Buyers < 100 || c.Concurrency < 1 || c.Checks < 0 || c.Calibrations < 1 {
		return fmt.Errorf("FLASHSALE_CAPACITY_BUYERS, _CONCURRENCY, _CHECKS, _CALIBRATIONS: %d, %d, %d, %d (expected at least 100 buyers, 1 worker, 0 checks, 1 calibration)",
			c.Buyers, c.Concurrency, c.Checks, c.Calibrations)
	}
	for _, s := range []string{c.Ingress, c.Consumer, c.Kafka, c.MySQL} {
		if _, err := parseProcSelector(s); err != nil {
			return err
		}
	}
	if c.Redis != "" {
		if _, err := parseProcSelector(c.Redis); err != nil {
			return err
		}
	}
	if _, err := parseCostOverrides(c.Costs); err != nil {
		return err
	}
	t := c.Target
	if t.BuyersPerSec <= 0 || t.Units <= 0 || t.Items < 1 || t.Headroom < 1 || t.NodeCores <= 0 || t.RowOrdersPerSec <= 0 || t.PartitionOrdersPerSec <= 0 {
		return fmt.Errorf("capacity target: expected positive buyers/s, units, items, node cores, row and replica orders/s, and a headroom of at least 1")
	}
	return nil
}

// parseCostOverrides reads -capacity-costs.
func parseCostOverrides(s string) (map[string][2]float64, error) {
	out := map[string][2]float64{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		so, or, ok2 := strings.Cut(v, "/")
		a, err1 := strconv.ParseFloat(so, 64)
		b, err2 := strconv.ParseFloat(or, 64)
		if !ok || !ok2 || err1 != nil || err2 != nil || a < 0 || b < 0 || !componentName(name) {
			return nil, fmt.Errorf("capacity: -capacity-costs %q: expected name=SOLDOUT/ORDER µs with name one of ingress, consumer, redis, kafka, mysql", kv)
		}
		out[name] = [2]float64{a, b}
	}
	return out, nil
}

func componentName(n string) bool {
	switch n {
	case "ingress", "consumer", "redis", "kafka", "mysql":
		return true
	}
	return false
}
