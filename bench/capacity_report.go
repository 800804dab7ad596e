package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteCapacity prints the capacity report: the measured costs, the
// sizing with its assumptions, and the check on this machine.
func WriteCapacity(w io.Writer, r CapacityReport, asJSON bool) error {
	if asJSON {
		if err := writeIndented(w, r); err != nil {
			return fmt.Errorf("bench: write capacity report: %w", err)
		}
		return nil
	}
	fmt.Fprintf(w, "capacity model (%d cores, everything co-located)\n\n", r.Cores)
	fmt.Fprintf(w, "CPU per answer (µs of one core, the median of %d calibration pairs, least..most beside it; a 202 includes its status polls, Kafka record, consumer write and MySQL):\n", r.Calibrations)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "component\tper 410\t\tper 202\t\tsource\t")
	for _, c := range r.Costs {
		if !c.Measured {
			fmt.Fprintf(tw, "%s\t-\t\t-\t\tnot measured\t\n", c.Name)
			continue
		}
		name := c.Name
		if c.CoLocatedOnly {
			name += " (load generator)"
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%.1f\t%s\t%s\t\n", name, c.SoldOut, rangeOf(c.SoldOutRange), c.Order, rangeOf(c.OrderRange), c.Source)
	}
	var so, or float64
	for _, c := range r.Costs {
		if c.Measured && !c.CoLocatedOnly {
			so, or = so+c.SoldOut, or+c.Order
		}
	}
	fmt.Fprintf(tw, "total (pipeline)\t%.1f\t\t%.1f\t\t\t\n", so, or)
	_ = tw.Flush()
	fmt.Fprintf(w, "Kafka: %.0f bytes per order record (key + value); polls per order %.2f\n\n", r.BytesPerMessage, r.PollsPerOrder)

	z := r.Sizing
	fmt.Fprintf(w, "sizing for %.0f buyers/s, %.0f units, %d items, headroom %.2g:\n", z.Target.BuyersPerSec, z.Target.Units, z.Target.Items, z.Target.Headroom)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "component\torder phase cores\tsold-out phase cores\tcores\tinstances\t")
	for _, c := range z.Components {
		if !c.Measured {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t %s\n", c.Name, c.Note)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%d\t %s\n", c.Name, c.OrderPhaseCores, c.SoldOutPhaseCores, c.Cores, c.Instances, c.Note)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "single-thread limits: %.0f orders/s per item → %d stock buckets per item; %d partitions (≥ consumer replicas); Kafka %.1f MB/s written (replicas included)\n",
		z.OrdersPerItemPerSec, z.BucketsPerItem, z.Partitions, z.KafkaMBPerSec)
	fmt.Fprintln(w, "assumptions:")
	for _, a := range z.Assumptions {
		fmt.Fprintln(w, "  -", a)
	}

	fmt.Fprintln(w, "\ncheck on this machine: predicted answers/s = cores ÷ Σ CPU per answer of every co-located component (bench included):")
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "sale\tunits\t202\t410\tpolls\tmeasured/s\tpredicted/s\terror\t")
	for _, run := range r.Runs {
		label := run.Kind
		if run.Kind != "check" {
			label += " (calibration)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%+.1f%%\t\n", label, run.Units, run.Accepted, run.SoldOut, run.Polls, run.AnswersPerSec, run.Predicted, run.ErrorPct)
	}
	_ = tw.Flush()
	if len(r.Runs) > 2*r.Calibrations {
		fmt.Fprintf(w, "check median error: %+.1f%% (goal: within ±25%%)\n", r.CheckMedianErrorPct)
	} else {
		fmt.Fprintln(w, "no check sales (-capacity-checks 0): the costs alone")
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// rangeOf is a cost's least..most over the calibration pairs, or nothing.
func rangeOf(r [2]float64) string {
	if r == [2]float64{} {
		return ""
	}
	return fmt.Sprintf("(%.0f..%.0f)", r[0], r[1])
}
