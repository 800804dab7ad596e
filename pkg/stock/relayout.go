package stock

import (
	"context"
	"fmt"
)

// retireScript empties one bucket of an old layout (lua/retire.lua). It
// runs only when an item's bucket count changes; it is loaded at start-up
// with the others (scripts), so its first run is never a NOSCRIPT.
var retireScript = scripts.Must("retire.lua")

// RetireLayout empties buckets prev-1 down to 0 of item's layout of prev
// buckets, before Warm writes the layout of n buckets: no stock, no buyer
// marks, a meta that says only n. It is the first of a count change's two
// phases, so a warm that stops half way never leaves buckets of both
// layouts selling (a caller of the old count in a bucket not yet rewritten
// would sell the old layout's stock beside the new one's: more units than
// MySQL has). Stopped in this phase, the old layout sells in the buckets
// not yet retired, nothing of the new; stopped in Warm's, the new layout
// sells in the buckets written, each exactly its MySQL row.
//
// Bucket 0 goes last: its meta is what Buckets reads, so until every other
// bucket of the old layout is retired the next warm still finds prev there
// and retires them again. A bucket with pending reservations is refused
// (ErrPending), and the buckets below it keep the old layout.
func (s *Store) RetireLayout(ctx context.Context, itemID int64, prev, n int) error {
	for b := prev - 1; b >= 0; b-- {
		k := BucketKeys(itemID, b)
		res, err := retireScript.Run(ctx, s.rdb, []string{k.Stock, k.Meta, k.Holders, k.HolderBits, k.Want, k.Reservations}, n).StringSlice()
		if err != nil {
			return unavailable(fmt.Sprintf("stock: retire bucket %d of item %d", b, itemID), err)
		}
		if len(res) == 2 && res[0] == "pending" {
			return fmt.Errorf("%w: %s reservations of item %d bucket %d, which its new layout of %d buckets retires", ErrPending, res[1], itemID, b, n)
		}
	}
	return nil
}
