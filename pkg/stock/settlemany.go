package stock

import "context"

// SettleEntry is one item's requests that became orders, for SettleMany.
type SettleEntry struct {
	ItemID     int64
	RequestIDs []string
}

// SettleMany is Settle for many items in one round trip: one settle call
// per item and bucket (each bucket is its own slot), pipelined. The order
// writer's set-based batch settles its hundreds of items so, instead of
// with a round trip each.
func (s *Store) SettleMany(ctx context.Context, entries []SettleEntry) error {
	var calls []ScriptCall
	for _, e := range entries {
		byBucket := map[int][]any{}
		var order []int
		for _, id := range e.RequestIDs {
			b := RequestKeys(e.ItemID, id).Bucket
			if _, ok := byBucket[b]; !ok {
				order = append(order, b)
			}
			byBucket[b] = append(byBucket[b], id)
		}
		for _, b := range order {
			calls = append(calls, ScriptCall{settleScript, []string{BucketKeys(e.ItemID, b).Reservations}, byBucket[b]})
		}
	}
	if len(calls) == 0 {
		return nil
	}
	_, err := s.pipelined(ctx, "stock: settle many", calls)
	return err
}
