package bucketview

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// Snapshot is one read of every bucket's Redis stock of an item.
type Snapshot struct {
	// Stocks is each bucket's stock (-1: no stock key).
	Stocks []int64
	// Consistent is true when no unit was moving between buckets while
	// they were read, so units missing from Stocks are really gone.
	Consistent bool
}

// SoldOut reports whether the snapshot proves that the buckets together
// hold fewer than qty units (only a consistent one can). Together, not
// each: 1 unit in each of two buckets is stock for a buyer of 2, which the
// rebalancer gathers into the buyer's bucket.
func (b Snapshot) SoldOut(qty int) bool {
	return b.Consistent && b.Total() < int64(qty)
}

// Total is the units the buckets hold together (a missing key counts 0).
func (b Snapshot) Total() int64 {
	var sum int64
	for _, v := range b.Stocks {
		sum += max(v, 0)
	}
	return sum
}

// Snapshot reads the stock of each of item's n buckets. A transfer takes
// its units out of the donor before it gives them to the recipient, so a
// plain read of the buckets can see them in neither. The rebalancer adds
// the transfer to TransfersLive before its first step and counts it in
// TransfersDone after its last; when both read the same before and after
// the stock reads, with nothing live, no unit was in flight while the
// buckets were read, and the snapshot is Consistent.
func (s *Store) Snapshot(ctx context.Context, itemID int64, n int) (Snapshot, error) {
	k := stock.KeysOf(itemID)
	before, err := s.transferMark(ctx, k)
	if err != nil {
		return Snapshot{}, err
	}
	stocks, err := s.st.BucketStocks(ctx, itemID, n)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Stocks: stocks}
	if before.Live > 0 {
		return snap, nil
	}
	after, err := s.transferMark(ctx, k)
	if err != nil {
		return Snapshot{}, err
	}
	snap.Consistent = after == before
	return snap, nil
}

func (s *Store) transferMark(ctx context.Context, k stock.Keys) (TransferMark, error) {
	var live *redis.IntCmd
	var done *redis.StringCmd
	_, err := s.st.Client().TxPipelined(ctx, func(p redis.Pipeliner) error {
		live = p.SCard(ctx, k.TransfersLive())
		done = p.Get(ctx, k.TransfersDone())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return TransferMark{}, stock.Unavailable("bucketview: transfers", err)
	}
	d, _ := done.Int64()
	return TransferMark{Live: live.Val(), Done: d}, nil
}
