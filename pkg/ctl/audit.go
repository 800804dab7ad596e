package ctl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flashsale-dev/flashsale/pkg/api"
)

func auditCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "audit ITEM",
		Short: "Check an item's invariants (exit code 3 when the audit is not ok)",
		Long: `Reads GET /api/v1/admin/items/{id}/audit: stock in Redis and MySQL, pending
reservations, orders by status, and the invariants. Exit code 3 when it is not
ok, so a script can gate on it; read it after the queue has drained (pending 0).`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, raw, err := getOfItem[api.AuditReport](cmd, o, args[0], "/audit")
			if err != nil {
				return err
			}
			if o.output == "json" {
				err = printJSON(cmd.OutOrStdout(), raw)
			} else {
				err = printAudit(cmd, rep)
			}
			if err != nil {
				return err
			}
			if !rep.OK {
				return &exitError{code: ExitAuditFailed, err: fmt.Errorf("audit of item %d: not ok: %s", rep.ItemID, strings.Join(rep.Violations, "; "))}
			}
			return nil
		},
	}
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "NOT OK"
}

func printAudit(cmd *cobra.Command, r api.AuditReport) error {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	kv := [][2]string{{"item", i(r.ItemID)}, {"audit", verdict(r.OK)}, {"total", i(r.Total)},
		{"stock", fmt.Sprintf("redis %d, mysql %d", r.RedisStock, r.DBStock)},
		{"pending", fmt.Sprintf("%d reservations, %d units", r.Pending, r.PendingQty)},
		{"orders", fmt.Sprintf("unpaid %d, paid %d, cancelled %d", r.Unpaid, r.Paid, r.Cancelled)},
		{"rejected", i(r.Rejected)}, {"buckets", strconv.Itoa(r.Buckets)}}
	for _, v := range r.Violations {
		kv = append(kv, [2]string{"violation", v})
	}
	for _, v := range r.Info {
		kv = append(kv, [2]string{"info", v})
	}
	if err := fields(cmd.OutOrStdout(), kv); err != nil {
		return err
	}
	if len(r.PerBucket) == 0 {
		return nil
	}
	rows := [][]string{}
	for _, b := range r.PerBucket {
		rows = append(rows, []string{strconv.Itoa(b.Bucket), i(b.Total), i(b.RedisStock), i(b.DBStock), i(b.Pending), i(b.Unpaid), i(b.Paid), i(b.Cancelled)})
	}
	fmt.Fprintln(cmd.OutOrStdout())
	return table(cmd.OutOrStdout(), []string{"BUCKET", "TOTAL", "REDIS", "MYSQL", "PENDING", "UNPAID", "PAID", "CANCELLED"}, rows)
}
