package ctl

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// queueTranscript is `queue transcript ITEM [--verify] [--ticket ID
// --arrival N]` over the public GET /api/v1/items/{id}/transcript. The
// checks are pkg/waitroom/draw's, run here on what the server sent, so they
// trust nothing but the transcript itself: an operator can show a buyer,
// and a buyer can run it without an admin token.
func queueTranscript(o *options) *cobra.Command {
	var verify bool
	var ticket string
	var arrival int64
	c := &cobra.Command{
		Use:   "transcript ITEM [--verify] [--ticket ID --arrival N]",
		Short: "An item's published queue transcript; check it, and a buyer's own position in it",
		Long: `Reads GET /api/v1/items/{id}/transcript, public from the sale's starts_at on (409
not_revealed before): the seed, its commitment and every ticket's hash in
serving order, the first "shuffled" of them taken before starts_at and ordered
by the seed, the rest behind them by arrival. No token is needed.

--verify checks it from itself alone: sha256(seed) is the commitment published
on the item before the sale, the arrival numbers are 1..n once each, and the
order is the one the seed gives. --ticket ID --arrival N (the buyer's ticket id
and arrival number, as POST /api/v1/items/{id}/queue answered them) verifies it
too and prints that ticket's position. With either, the table shows the
summary and the verdict, not every ticket (-o json shows the whole answer).
Exit code 3 when a check fails.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o), // offers nothing without an admin token
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := itemID(args[0])
			if err != nil {
				return err
			}
			if (ticket == "") != (arrival == 0) {
				return usageErr("--ticket and --arrival go together: the buyer's ticket id and its arrival number (1 or more)")
			}
			if arrival < 0 {
				return usageErr("--arrival %d: expected the ticket's arrival number, 1 or more", arrival)
			}
			var tr draw.Transcript
			raw, err := o.getPublic(cmd, "/api/v1/items/"+strconv.FormatInt(id, 10)+"/transcript", &tr)
			if err != nil {
				return err
			}
			check := verify || ticket != ""
			if o.output == "json" {
				err = printJSON(cmd.OutOrStdout(), raw)
			} else {
				// A check prints its verdict, not thousands of rows.
				err = printTranscript(cmd, tr, !check)
			}
			if err != nil {
				return err
			}
			// Under -o json the checks' lines go to stderr, so stdout stays
			// the one JSON document.
			w := cmd.OutOrStdout()
			if o.output == "json" {
				w = cmd.ErrOrStderr()
			}
			return checkTranscript(w, tr, verify, ticket, arrival)
		},
	}
	c.Flags().BoolVar(&verify, "verify", false, "check the transcript: the seed matches the commitment and the order follows from it (exit 3 when not)")
	c.Flags().StringVar(&ticket, "ticket", "", "a buyer's ticket id: print its position (verifies the transcript too)")
	c.Flags().Int64Var(&arrival, "arrival", 0, "the arrival number the buyer was given with --ticket")
	return c
}

// checkTranscript runs the checks the flags ask for and writes their
// result to w; a failed one is exit code 3.
func checkTranscript(w io.Writer, tr draw.Transcript, verify bool, ticket string, arrival int64) error {
	if !verify && ticket == "" {
		return nil
	}
	var pos int
	var err error
	if ticket != "" {
		pos, err = draw.OwnPosition(tr, ticket, arrival) // verifies first
	} else {
		err = draw.Verify(tr)
	}
	if err != nil {
		return &exitError{code: ExitAuditFailed, err: fmt.Errorf("transcript of item %d: %w", tr.ItemID, err)}
	}
	fmt.Fprintf(w, "verified: sha256(seed) is the commitment and the order of the %d tickets follows from the seed\n", len(tr.Tickets))
	if ticket != "" {
		fmt.Fprintf(w, "position: %d of %d (arrival %d)\n", pos, len(tr.Tickets), arrival)
	}
	return nil
}

// printTranscript writes the transcript's summary and, with rows, every
// ticket in serving order.
func printTranscript(cmd *cobra.Command, tr draw.Transcript, rows bool) error {
	out := cmd.OutOrStdout()
	if err := fields(out, [][2]string{{"item", strconv.FormatInt(tr.ItemID, 10)}, {"commitment", tr.Commitment}, {"seed", tr.Seed.String()},
		{"tickets", fmt.Sprintf("%d, the first %d taken before starts_at (shuffled)", len(tr.Tickets), tr.Shuffled)}}); err != nil {
		return err
	}
	if !rows {
		return nil
	}
	t := make([][]string, 0, len(tr.Tickets))
	for i, e := range tr.Tickets {
		t = append(t, []string{strconv.Itoa(i + 1), strconv.FormatInt(e.Arrival, 10), e.Ticket})
	}
	fmt.Fprintln(out)
	return table(out, []string{"POSITION", "ARRIVAL", "TICKET"}, t)
}
