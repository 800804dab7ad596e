package ctl

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func saleCmd(o *options) *cobra.Command {
	c := &cobra.Command{Use: "sale", Short: "Follow a running sale"}
	var interval time.Duration
	var count int
	var noClear bool
	w := &cobra.Command{
		Use:   "watch ITEM",
		Short: "A live view of a sale, refreshed every second",
		Long: `Reads GET /api/v1/admin/items/{id}/live every --interval and shows stock in
Redis and MySQL (per bucket for a bucketed item), pending reservations, orders,
the answers buyers got (total and per second, summed over every ingress
replica), the 202s' p50/p99 over the last interval, consumer lag, DLQ size and
the audit verdict. Rates need two reads, so the first frame shows "-".
-o json prints one JSON object per frame (the read and the computed rates).
Ctrl-C stops it.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o),
		RunE: onItem(func(cmd *cobra.Command, p string) error {
			var prev *Live
			out := cmd.OutOrStdout()
			for n := 0; count == 0 || n < count; n++ {
				if n > 0 {
					o.env.Sleep(interval)
				}
				if err := cmd.Context().Err(); err != nil {
					return nil
				}
				cur := &Live{}
				if _, err := o.get(cmd, p+"/live", nil, cur); err != nil {
					return err
				}
				v := Compute(prev, cur)
				prev = cur
				if o.output == "json" {
					b, err := json.Marshal(v)
					if err != nil {
						return err
					}
					fmt.Fprintln(out, string(b))
					continue
				}
				if !noClear {
					fmt.Fprint(out, "\x1b[H\x1b[2J")
				}
				if err := Render(out, v); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	w.Flags().DurationVar(&interval, "interval", time.Second, "refresh interval")
	w.Flags().IntVar(&count, "count", 0, "stop after this many frames (0: until interrupted)")
	w.Flags().BoolVar(&noClear, "no-clear", false, "do not clear the screen between frames")
	c.AddCommand(w)
	return c
}
