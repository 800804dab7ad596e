package ctl

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// StockResult is a StockChangeResult (ingress/openapi.yaml).
type StockResult struct {
	OperationID string `json:"operation_id"`
	ItemID      int64  `json:"item_id"`
	Delta       int64  `json:"delta"`
	Applied     int64  `json:"applied"`
	Replayed    bool   `json:"replayed"`
}

// newOperationID names a stock change the operator did not name: the time
// (for the operator reading it back) and 64 random bits (so two operators'
// ids never meet).
func newOperationID(now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "ctl-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// itemsStock is `items stock ITEM --delta N [--operation-id ID]`: POST
// .../stock. Without --operation-id one is made and printed before the
// call, so an operator whose call failed or hung can repeat it with the
// same id, which applies the change once whatever happened to the first.
func itemsStock(o *options) *cobra.Command {
	var delta int64
	var opID string
	c := &cobra.Command{
		Use:   "stock ITEM --delta N [--operation-id ID]",
		Short: "Restock (+N) or withdraw (-N) units while the item sells, once per operation id",
		Long: "Restock (--delta +500) or withdraw (--delta -200) units of a live sale. The change is applied once per\n" +
			"operation id: repeat a call whose answer was lost with the same --operation-id (the one printed, when\n" +
			"none was given) and nothing more changes. A withdraw takes only units nobody holds, at most N, and\n" +
			"says how many (applied).",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeItems(o),
		RunE: onItem(func(cmd *cobra.Command, p string) error {
			if delta == 0 {
				return usageErr("--delta: required, a non-zero number of units: +N to restock, -N to withdraw")
			}
			if opID == "" {
				opID = newOperationID(time.Now())
				// stderr, so -o json stays one document; printed before the
				// call, so a lost answer can still be retried.
				fmt.Fprintf(cmd.ErrOrStderr(), "operation id %s (repeat with --operation-id %s to retry)\n", opID, opID)
			}
			var r StockResult
			raw, err := o.send(cmd, http.MethodPost, p+"/stock", map[string]any{"delta": delta, "operation_id": opID}, "application/json", &r)
			if err != nil {
				return err
			}
			if o.output == "json" {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			return fields(cmd.OutOrStdout(), [][2]string{{"item", strconv.FormatInt(r.ItemID, 10)}, {"operation_id", r.OperationID},
				{"delta", fmt.Sprintf("%+d", r.Delta)}, {"applied", fmt.Sprintf("%+d", r.Applied)}, {"replayed", strconv.FormatBool(r.Replayed)}})
		}),
	}
	c.Flags().Int64Var(&delta, "delta", 0, "units to add (+N) or take (-N); a withdraw takes only free units")
	c.Flags().StringVar(&opID, "operation-id", "", "the change's id (1-64 of A-Z a-z 0-9 . _ : -); default: a new one, printed")
	return c
}
