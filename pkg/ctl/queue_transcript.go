package ctl

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/flashsale-dev/flashsale/pkg/api"
	"github.com/flashsale-dev/flashsale/pkg/waitroom/draw"
)

// queueTranscript is `queue transcript ITEM [--verify] [--ticket ID
// (--arrival N | --receipt R)]` over the public GET
// /api/v1/items/{id}/transcript (and, with --receipt, the public
// /.well-known/flashsale-receipt-key). The checks are pkg/waitroom/draw's,
// run here on what the server sent, so they trust nothing but the
// transcript, the published key and the buyer's own receipt: an operator
// can show a buyer, and a buyer can run it without an admin token.
func queueTranscript(o *options) *cobra.Command {
	var verify bool
	var ticket, receipt string
	var arrival int64
	c := &cobra.Command{
		Use:     "transcript ITEM [--verify] [--ticket ID (--arrival N | --receipt R)]",
		Aliases: []string{"verify"},
		Short:   "An item's published queue transcript; check it, and a buyer's own place and receipt in it",
		Long: `Reads GET /api/v1/items/{id}/transcript, public from the sale's starts_at on (409
not_revealed before): the seed, its commitment, the rounds closed so far (each
with the Merkle root of its tickets, published at its close, and its seed
derived from the server seed and that root) and every ticket's hash in serving
order (docs/fairness.md). No token is needed. "queue verify" is the same command.

--verify checks it from itself alone: sha256(seed) is the commitment published
on the item before the sale, the arrival numbers are 1..n once each, each
round's root is its tickets' and its seed the one derived, and the order is the
one the seeds give. --ticket ID with --arrival N (the buyer's ticket id and
arrival number, as POST /api/v1/items/{id}/queue answered them) verifies it too,
prints that ticket's position and checks the Merkle proof of its round. With
--receipt R (the receipt that answer carried) instead of --arrival, the receipt
is checked against the deployment's key (/.well-known/flashsale-receipt-key)
first: a valid receipt whose ticket the transcript leaves out, or lists with
another arrival, is the buyer's proof of it. With any check the table shows the
summary and the verdict, not every ticket (-o json shows the whole answer).
Exit code 3 when a check fails.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o), // offers nothing without an admin token
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := itemID(args[0])
			if err != nil {
				return err
			}
			if ticket != "" && (arrival == 0) == (receipt == "") {
				return usageErr("--ticket goes with one of --arrival (its arrival number, 1 or more) or --receipt (the receipt its answer carried)")
			}
			if ticket == "" && (arrival != 0 || receipt != "") {
				return usageErr("--arrival and --receipt go with --ticket: the buyer's ticket id")
			}
			if arrival < 0 {
				return usageErr("--arrival %d: expected the ticket's arrival number, 1 or more", arrival)
			}
			var rc *draw.Receipt
			if receipt != "" {
				var key api.ReceiptKey
				if _, err := o.getPublic(cmd, "/.well-known/flashsale-receipt-key", &key); err != nil {
					return err
				}
				r, err := checkReceipt(key, receipt, id, ticket)
				if err != nil {
					return &exitError{code: ExitAuditFailed, err: err}
				}
				rc, arrival = &r, r.Arrival
			}
			var tr draw.RoundTranscript
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
			return checkTranscript(w, tr, verify, ticket, arrival, rc)
		},
	}
	c.Flags().BoolVar(&verify, "verify", false, "check the transcript: the seed matches the commitment, the roots their rounds, and the order follows (exit 3 when not)")
	c.Flags().StringVar(&ticket, "ticket", "", "a buyer's ticket id: print its position and check its round's proof (verifies the transcript too)")
	c.Flags().Int64Var(&arrival, "arrival", 0, "the arrival number the buyer was given with --ticket")
	c.Flags().StringVar(&receipt, "receipt", "", "the receipt the buyer was given with --ticket: checked against the deployment's published key")
	return c
}

// checkReceipt checks a buyer's receipt against the published key: signed
// by it, for item, for the ticket whose id the buyer holds.
func checkReceipt(key api.ReceiptKey, receipt string, item int64, ticket string) (draw.Receipt, error) {
	pub, err := hex.DecodeString(key.PublicKey)
	if key.Algorithm != "Ed25519" || err != nil || len(pub) != ed25519.PublicKeySize {
		return draw.Receipt{}, fmt.Errorf("the published receipt key is not an Ed25519 key (%s %q)", key.Algorithm, key.PublicKey)
	}
	rc, err := draw.VerifyReceipt(ed25519.PublicKey(pub), receipt)
	if err != nil {
		return draw.Receipt{}, fmt.Errorf("receipt: %w (key %s)", err, key.KeyID)
	}
	if rc.Item != item || rc.Ticket != draw.Hash(ticket) {
		return draw.Receipt{}, fmt.Errorf("receipt: it is for item %d, ticket hash %s, not item %d's ticket %s", rc.Item, rc.Ticket, item, ticket)
	}
	return rc, nil
}

// checkTranscript runs the checks the flags ask for and writes their
// result to w; a failed one is exit code 3.
func checkTranscript(w io.Writer, tr draw.RoundTranscript, verify bool, ticket string, arrival int64, rc *draw.Receipt) error {
	if !verify && ticket == "" {
		return nil
	}
	var place draw.Place
	var err error
	if ticket != "" {
		place, err = draw.OwnPositionRounds(tr, ticket, arrival) // verifies first
	} else {
		err = draw.VerifyRounds(tr)
	}
	if err != nil {
		if rc != nil && errors.Is(err, draw.ErrNotInTranscript) {
			err = fmt.Errorf("%w: the receipt, signed by the deployment's key, says ticket %s took arrival %d at %s",
				err, rc.Ticket, rc.Arrival, rc.TakenAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		}
		return &exitError{code: ExitAuditFailed, err: fmt.Errorf("transcript of item %d: %w", tr.ItemID, err)}
	}
	fmt.Fprintf(w, "verified: sha256(seed) is the commitment, the %d rounds' roots and seeds are their tickets', and the order of the %d tickets follows\n",
		len(tr.Rounds), len(tr.Tickets))
	if rc != nil {
		fmt.Fprintf(w, "receipt: signed by the deployment's key, arrival %d\n", rc.Arrival)
	}
	if ticket != "" {
		fmt.Fprintf(w, "position: %d of %d (arrival %d)\n", place.Position, len(tr.Tickets), arrival)
		if place.Round >= 0 {
			fmt.Fprintf(w, "round: %d, leaf %d of %d, its Merkle proof leads to the root %s\n", place.Round, place.Index, place.Size, place.Root)
		}
	}
	return nil
}

// printTranscript writes the transcript's summary and, with rows, every
// ticket in serving order.
func printTranscript(cmd *cobra.Command, tr draw.RoundTranscript, rows bool) error {
	out := cmd.OutOrStdout()
	kv := [][2]string{{"item", strconv.FormatInt(tr.ItemID, 10)}, {"commitment", tr.Commitment}, {"seed", tr.Seed.String()},
		{"tickets", strconv.Itoa(len(tr.Tickets))}}
	for _, r := range tr.Rounds {
		kv = append(kv, [2]string{"round " + strconv.Itoa(r.N), fmt.Sprintf("arrivals %d..%d, root %s", r.First, r.Last, r.Root)})
	}
	if err := fields(out, kv); err != nil {
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
