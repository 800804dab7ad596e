package bucketview_test

import (
	"context"
	"testing"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/bucketview"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// soldOut is the ingress's judgement of an item's buckets for a buyer of
// qty (pkg/admission: Snapshot, then SoldOut).
func soldOut(ctx context.Context, s *stock.Store, item int64, n, qty int) (bool, error) {
	snap, err := bucketview.NewStore(s).Snapshot(ctx, item, n)
	return snap.SoldOut(qty), err
}

// A snapshot never proves "sold out" while a transfer is live, even when
// every bucket reads empty (the units are in neither bucket then).
func TestSnapshotSeesTransfers(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := stock.New(rdb)
	ctx := context.Background()
	item := testenv.WarmBuckets(t, s, 0, 1, 0)
	if gone, err := soldOut(ctx, s, item, 3, 1); err != nil || gone {
		t.Fatalf("sold out with a unit in bucket 1 = %v, %v", gone, err)
	}
	k := stock.KeysOf(item)
	// The transfer took the unit out of bucket 1 and has not given it yet.
	rdb.Set(ctx, stock.BucketKeys(item, 1).Stock, 0, 0)
	rdb.SAdd(ctx, k.TransfersLive(), 41)
	if gone, err := soldOut(ctx, s, item, 3, 1); err != nil || gone {
		t.Fatalf("sold out with a transfer live = %v, %v; want false", gone, err)
	}
	rdb.Incr(ctx, k.TransfersDone())
	rdb.SRem(ctx, k.TransfersLive(), 41)
	if gone, err := soldOut(ctx, s, item, 3, 1); err != nil || !gone {
		t.Fatalf("sold out with every bucket empty and nothing live = %v, %v; want true", gone, err)
	}
	if gone, err := soldOut(ctx, s, item, 3, 2); err != nil || !gone {
		t.Fatalf("qty 2: %v, %v", gone, err)
	}
	// One unit in each of two buckets is stock for a buyer of 2.
	rdb.Set(ctx, stock.BucketKeys(item, 0).Stock, 1, 0)
	rdb.Set(ctx, stock.BucketKeys(item, 2).Stock, 1, 0)
	if gone, err := soldOut(ctx, s, item, 3, 2); err != nil || gone {
		t.Fatalf("qty 2 with 1 unit in each of two buckets: sold out %v, %v; want false", gone, err)
	}
	if gone, err := soldOut(ctx, s, item, 3, 3); err != nil || !gone {
		t.Fatalf("qty 3 with 2 units left: sold out %v, %v; want true", gone, err)
	}
}
