package orderstatus_test

import (
	"context"
	"testing"
	"time"

	"github.com/flashsale-dev/flashsale/internal/testenv"
	"github.com/flashsale-dev/flashsale/pkg/orderstatus"
	"github.com/flashsale-dev/flashsale/pkg/reqid"
	"github.com/flashsale-dev/flashsale/pkg/stock"
)

// TestUnpaidStatusIsShortLived: an UNPAID entry is the one cached status that
// a later write (PAID, CANCELLED) must replace. Without WAIT, a Redis
// failover can lose that later write, and the replica then serves the older
// UNPAID; a short life bounds how long a buyer who paid can read UNPAID.
// Final statuses never change, so they keep the long life.
func TestUnpaidStatusIsShortLived(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	s := orderstatus.NewStore(stock.New(rdb))
	ctx := context.Background()
	item := testenv.ItemID()
	unpaid, final := reqid.New(item, time.Now()), reqid.New(item, time.Now())
	if err := s.PutStatus(ctx, item, unpaid, orderstatus.RankUnpaid, []byte("unpaid")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutStatus(ctx, item, final, orderstatus.RankFinal, []byte("paid")); err != nil {
		t.Fatal(err)
	}
	const bound = 5 * time.Second
	if ttl := rdb.PTTL(ctx, stock.KeysOf(item).Status(unpaid)).Val(); ttl <= 0 || ttl > bound {
		t.Fatalf("UNPAID cached for %v, want at most %v", ttl, bound)
	}
	if ttl := rdb.PTTL(ctx, stock.KeysOf(item).Status(final)).Val(); ttl < 10*time.Minute {
		t.Fatalf("final status cached for %v, want the long life", ttl)
	}
}
