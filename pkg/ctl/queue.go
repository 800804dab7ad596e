package ctl

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/flashsale-dev/flashsale/pkg/api"
)

func queueCmd(o *options) *cobra.Command {
	c := &cobra.Command{Use: "queue", Short: "Read an item's waiting room and check its published transcript"}
	c.AddCommand(queueShow(o), queueTranscript(o))
	return c
}

func queueShow(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "show ITEM",
		Short: "An item's waiting room: tickets taken, serving position, waiting, the gate's holder",
		Long: `Reads GET /api/v1/admin/items/{id}/queue: when the queue opens and the sale starts,
the commitment to the shuffle's seed, the rate the gate admits at, the tickets
taken, the serving position (how many the gate has admitted; 0 before
starts_at), the tickets beyond it, the reaper replica holding the gate, and
the waitlist: units released after the sell-out, held, claimed by the next
tickets in line, and returned to the stock (a bucketed item's also moved
between its buckets, to the bucket of the buyer offered them).
Read it twice a few seconds apart during a sale: a serving position that does
not move while tickets wait is a stalled gate (runbook FlashsaleQueueGateStalled).`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			v, raw, err := getOfItem[api.AdminQueue](cmd, o, args[0], "/queue")
			if err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			return printQueue(cmd, v)
		},
	}
}

func printQueue(cmd *cobra.Command, v api.AdminQueue) error {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	holder := "none: no reaper holds the gate, nobody is being admitted"
	if v.GateHolder != nil {
		holder = *v.GateHolder
	}
	w := v.Waitlist
	waiting := i(v.Waiting)
	if v.Rate > 0 && v.Waiting > 0 {
		// How long the gate takes to admit them all at the item's
		// configured rate (from starts_at, before it); the tickets' own
		// estimates use the rate the gate is seen admitting at, at most
		// this one.
		waiting += fmt.Sprintf(" (%v at the rate)", time.Duration((v.Waiting+int64(v.Rate)-1)/int64(v.Rate))*time.Second)
	}
	wl := fmt.Sprintf("%d released: %d held (%d on offer), %d claimed, %d returned; %d offered, %d lapsed",
		w.In, w.Pool+w.Offers+w.Moving, w.Offers, w.Claimed, w.Returned, w.Offered, w.Lapsed)
	if w.Moved > 0 || w.Moving != 0 {
		// A bucketed item's: units moved to the bucket of the buyer offered them.
		wl += fmt.Sprintf("; %d moved between buckets (%d moving)", w.Moved, w.Moving)
	}
	return fields(cmd.OutOrStdout(), [][2]string{{"item", i(v.ItemID)}, {"opens_at", stamp(v.OpensAt)}, {"starts_at", stamp(v.StartsAt)},
		{"commitment", v.Commitment}, {"rate", strconv.Itoa(v.Rate) + " a second"}, {"tickets", i(v.Tickets)},
		{"serving_position", i(v.Serving)}, {"waiting", waiting}, {"gate_holder", holder},
		{"waitlist", wl}})
}
