package ctl

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flashsale-dev/flashsale/pkg/api"
)

func dlqCmd(o *options) *cobra.Command {
	c := &cobra.Command{
		Use:   "dlq",
		Short: "Read and replay the consumers' dead-letter topic",
		Long: `The dead-letter topic holds what the consumers could not write: poison (a
payload that does not decode) and messages given up after failing for
FLASHSALE_GIVE_UP_AFTER. A replay publishes the original message to the orders
topic again; the consumer decides it on its idempotent path, so replaying twice
changes nothing. It helps only a request nobody has decided yet ("decision"
empty in dlq show) whose cause was fixed; see docs/operating.md, "Dead letters".`,
	}
	c.AddCommand(dlqList(o), dlqShow(o), dlqReplay(o))
	return c
}

func offsetArg(s string) (string, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return "", usageErr("offset %q: expected a dead-letter offset (an integer >= 0)", s)
	}
	return "/api/v1/admin/dlq/" + strconv.FormatInt(n, 10), nil
}

func dlqList(o *options) *cobra.Command {
	var limit int
	var before, after int64
	c := &cobra.Command{
		Use: "list", Short: "Letters, newest first (--before pages down; --after lists newer ones oldest first, below --before if given)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if cmd.Flags().Changed("before") {
				q.Set("before", strconv.FormatInt(before, 10))
			}
			if cmd.Flags().Changed("after") {
				q.Set("after", strconv.FormatInt(after, 10))
			}
			var p api.DeadLetterPage
			raw, err := o.get(cmd, "/api/v1/admin/dlq", q, &p)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			rows := [][]string{}
			for _, l := range p.Letters {
				rows = append(rows, []string{strconv.FormatInt(l.Offset, 10), stamp(l.FailedAt), l.Key, dash(l.RequestID), l.Reason})
			}
			w := cmd.OutOrStdout()
			if err := table(w, []string{"OFFSET", "FAILED", "KEY", "REQUEST", "REASON"}, rows); err != nil {
				return err
			}
			fmt.Fprintf(w, "%d letters held (offsets %d to %d)\n", p.EndOffset-p.FirstOffset, p.FirstOffset, p.EndOffset-1)
			if p.NextBefore != nil {
				fmt.Fprintf(w, "older: --before %d\n", *p.NextBefore)
			}
			if p.NextAfter != nil {
				fmt.Fprintf(w, "newer: --after %d\n", *p.NextAfter)
			}
			return nil
		},
	}
	c.Flags().IntVar(&limit, "limit", 50, "letters per page (1-500)")
	c.Flags().Int64Var(&before, "before", 0, "list letters below this offset")
	c.Flags().Int64Var(&after, "after", 0, "list letters above this offset, oldest first")
	return c
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dlqShow(o *options) *cobra.Command {
	return &cobra.Command{
		Use: "show OFFSET", Short: "One letter: its reason, original payload, and whether a replay could help", Args: cobra.ExactArgs(1),
		RunE: onPath(offsetArg, func(cmd *cobra.Command, p string) error {
			var l api.DeadLetterDetail
			raw, err := o.get(cmd, p, nil, &l)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			decision := "undecided: a replay lets the consumer decide it"
			if l.Decision != nil {
				decision = strings.TrimSpace(l.Decision.Outcome+" "+l.Decision.Reason) + ": a replay changes nothing (the consumer drops it)"
			}
			if !l.Replayable {
				decision = "does not decode (" + l.DecodeError + "): replay refused, it would only be dead-lettered again"
			}
			return fields(cmd.OutOrStdout(), [][2]string{{"offset", strconv.FormatInt(l.Offset, 10)}, {"failed_at", stamp(l.FailedAt)},
				{"reason", l.Reason}, {"key", l.Key}, {"request_id", dash(l.RequestID)},
				{"source", fmt.Sprintf("%s partition %d offset %d", l.Source.Topic, l.Source.Partition, l.Source.Offset)},
				{"payload (" + l.PayloadEncoding + ")", l.Payload}, {"replay", decision}})
		}),
	}
}

func dlqReplay(o *options) *cobra.Command {
	return &cobra.Command{
		Use: "replay OFFSET", Short: "Publish a letter's original message to the orders topic again (idempotent)", Args: cobra.ExactArgs(1),
		RunE: onPath(offsetArg, func(cmd *cobra.Command, p string) error {
			var r api.DeadLetterReplay
			raw, err := o.send(cmd, http.MethodPost, p+"/replay", nil, "", &r)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			note := "undecided before: the consumer decides it now"
			if r.Decision != nil {
				note = "already " + strings.TrimSpace(r.Decision.Outcome+" "+r.Decision.Reason) + ": the consumer drops it"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "replayed letter %d (request %s) to %s; %s\n", r.Offset, r.RequestID, r.Topic, note)
			return err
		}),
	}
}
