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

func TestStatusNeverMovesBackwards(t *testing.T) {
	t.Parallel()
	s := orderstatus.NewStore(stock.New(testenv.Redis(t)))
	ctx := context.Background()
	item := testenv.ItemID()
	rid := reqid.New(item, time.Now())
	for _, step := range []struct {
		rank orderstatus.StatusRank
		body string
	}{{orderstatus.RankUnpaid, "unpaid"}, {orderstatus.RankFinal, "paid"}, {orderstatus.RankUnpaid, "unpaid-late"}} {
		if err := s.PutStatus(ctx, item, rid, step.rank, []byte(step.body)); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := s.GetStatus(ctx, item, rid)
	if err != nil || !ok || string(got) != "paid" {
		t.Fatalf("status %q %v %v, want paid", got, ok, err)
	}
}
